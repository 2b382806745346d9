import { ErrorBoundary, LocationProvider, Route, Router, lazy } from 'preact-iso';
import { useEffect } from 'preact/hooks';
import { Layout } from './layout';
import { Login } from './pages/login';
import { loadSession, useSession } from './session';
import { Loading } from './ui/components';

/*
 * The routes. Every page but the login is its own chunk, loaded when first opened, so the first
 * load carries only the shell, the login and the dashboard.
 */
const Dashboard = lazy(() => import('./pages/dashboard'));
const Agents = lazy(() => import('./pages/agents'));
const AgentDetail = lazy(() => import('./pages/agent-detail'));
const Chat = lazy(() => import('./pages/chat'));
const Tasks = lazy(() => import('./pages/tasks'));
const Workflows = lazy(() => import('./pages/workflows'));
const Cron = lazy(() => import('./pages/cron'));
const Webhooks = lazy(() => import('./pages/webhooks'));
const Notifications = lazy(() => import('./pages/notifications'));
const Memory = lazy(() => import('./pages/memory'));
const Skills = lazy(() => import('./pages/skills'));
const Files = lazy(() => import('./pages/files'));
const Users = lazy(() => import('./pages/users'));
const Audit = lazy(() => import('./pages/audit'));
const Settings = lazy(() => import('./pages/settings'));
const Profile = lazy(() => import('./pages/profile'));
const NotFound = lazy(() => import('./pages/not-found'));

export function App() {
  const user = useSession();
  useEffect(() => {
    void loadSession();
  }, []);
  if (user === undefined) return <Loading />;
  if (user === null) return <Login />;
  return (
    <LocationProvider>
      <Layout>
        <ErrorBoundary>
          <Router>
            <Route path="/" component={Dashboard} />
            <Route path="/agents" component={Agents} />
            <Route path="/agents/:name" component={AgentDetail} />
            <Route path="/chat" component={Chat} />
            <Route path="/chat/:agent" component={Chat} />
            <Route path="/tasks" component={Tasks} />
            <Route path="/workflows" component={Workflows} />
            <Route path="/cron" component={Cron} />
            <Route path="/webhooks" component={Webhooks} />
            <Route path="/notifications" component={Notifications} />
            <Route path="/memory" component={Memory} />
            <Route path="/skills" component={Skills} />
            {/* Not /files: that path is the daemon's file download on the same port. */}
            <Route path="/user-files" component={Files} />
            <Route path="/users" component={Users} />
            <Route path="/audit" component={Audit} />
            <Route path="/settings" component={Settings} />
            <Route path="/profile" component={Profile} />
            <Route default component={NotFound} />
          </Router>
        </ErrorBoundary>
      </Layout>
    </LocationProvider>
  );
}
