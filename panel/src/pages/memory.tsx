import { Empty, Page } from '../ui/components';

export default function Memory() {
  return (
    <Page title="Memory">
      <Empty />
    </Page>
  );
}
