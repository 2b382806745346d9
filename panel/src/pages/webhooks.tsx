import { Empty, Page } from '../ui/components';

export default function Webhooks() {
  return (
    <Page title="Webhooks">
      <Empty />
    </Page>
  );
}
