import { Empty, Page } from '../ui/components';

export default function Notifications() {
  return (
    <Page title="Notifications">
      <Empty />
    </Page>
  );
}
