import { Empty, Page } from '../ui/components';

export default function Dashboard() {
  return (
    <Page title="Dashboard">
      <Empty />
    </Page>
  );
}
