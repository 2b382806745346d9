import { Empty, Page } from '../ui/components';

export default function Profile() {
  return (
    <Page title="Profile">
      <Empty />
    </Page>
  );
}
