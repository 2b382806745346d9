import { Empty, Page } from '../ui/components';

export default function Skills() {
  return (
    <Page title="Skills">
      <Empty />
    </Page>
  );
}
