import { Empty, Page } from '../ui/components';

export default function Chat() {
  return (
    <Page title="Chat">
      <Empty />
    </Page>
  );
}
