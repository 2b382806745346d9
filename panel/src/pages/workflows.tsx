import { Empty, Page } from '../ui/components';

export default function Workflows() {
  return (
    <Page title="Workflows">
      <Empty />
    </Page>
  );
}
