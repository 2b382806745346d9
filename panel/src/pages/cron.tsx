import { Empty, Page } from '../ui/components';

export default function Cron() {
  return (
    <Page title="Cron">
      <Empty />
    </Page>
  );
}
