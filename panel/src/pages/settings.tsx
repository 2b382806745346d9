import { Empty, Page } from '../ui/components';

export default function Settings() {
  return (
    <Page title="Settings">
      <Empty />
    </Page>
  );
}
