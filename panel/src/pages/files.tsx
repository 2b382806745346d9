import { Empty, Page } from '../ui/components';

export default function Files() {
  return (
    <Page title="Files">
      <Empty />
    </Page>
  );
}
