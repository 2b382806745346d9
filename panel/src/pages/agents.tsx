import { Empty, Page } from '../ui/components';

export default function Agents() {
  return (
    <Page title="Agents">
      <Empty />
    </Page>
  );
}
