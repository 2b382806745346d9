import { Empty, Page } from '../ui/components';

export default function Users() {
  return (
    <Page title="Users">
      <Empty />
    </Page>
  );
}
