import { Empty, Page } from '../ui/components';

export default function AgentDetail() {
  return (
    <Page title="AgentDetail">
      <Empty />
    </Page>
  );
}
