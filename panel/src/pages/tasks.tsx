import { Empty, Page } from '../ui/components';

export default function Tasks() {
  return (
    <Page title="Tasks">
      <Empty />
    </Page>
  );
}
