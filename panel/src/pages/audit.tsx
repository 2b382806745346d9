import { Empty, Page } from '../ui/components';

export default function Audit() {
  return (
    <Page title="Audit">
      <Empty />
    </Page>
  );
}
