/** The dashboard's entry: one router over every page; each page has its own URL. Pages load on demand. */
import { render } from "preact";
import { LocationProvider, Route, Router, lazy } from "preact-iso";
import { Layout } from "./layout";
import { Login } from "./pages/login";
import { Overview } from "./pages/overview";
import "./style.css";

const Sources = lazy(() => import("./pages/sources"));
const Source = lazy(() => import("./pages/sources").then((m) => m.SourcePage));
const Destinations = lazy(() => import("./pages/destinations"));
const Destination = lazy(() => import("./pages/destinations").then((m) => m.DestinationPage));
const Transformations = lazy(() => import("./pages/transformations"));
const Transformation = lazy(() => import("./pages/transformations").then((m) => m.TransformationPage));
const Live = lazy(() => import("./pages/live"));
const TestApi = lazy(() => import("./pages/test-api"));
const Regulations = lazy(() => import("./pages/regulations"));
const Tokens = lazy(() => import("./pages/tokens").then((m) => m.Tokens));
const ImportCheck = lazy(() => import("./pages/import-check"));
const Events = lazy(() => import("./pages/events"));
const TrackingPlans = lazy(() => import("./pages/tracking-plans"));
const TrackingPlan = lazy(() => import("./pages/tracking-plans").then((m) => m.TrackingPlanPage));

function NotFound() {
  return (
    <>
      <h1>Not found</h1>
      <p>
        There is no page at this address. <a href="/">Go to the overview</a>.
      </p>
    </>
  );
}

function App() {
  if (location.pathname === "/login") return <Login />;
  return (
    <LocationProvider>
      <Layout>
        <Router>
          <Route path="/" component={Overview} />
          <Route path="/sources" component={Sources} />
          <Route path="/sources/:id" component={Source} />
          <Route path="/destinations" component={Destinations} />
          <Route path="/destinations/:id" component={Destination} />
          <Route path="/transformations" component={Transformations} />
          <Route path="/transformations/:id" component={Transformation} />
          <Route path="/live" component={Live} />
          <Route path="/events" component={Events} />
          <Route path="/tracking-plans" component={TrackingPlans} />
          <Route path="/tracking-plans/:id" component={TrackingPlan} />
          <Route path="/test" component={TestApi} />
          <Route path="/regulations" component={Regulations} />
          <Route path="/tokens" component={Tokens} />
          <Route path="/import-check" component={ImportCheck} />
          <Route default component={NotFound} />
        </Router>
      </Layout>
    </LocationProvider>
  );
}

render(<App />, document.getElementById("app")!);
