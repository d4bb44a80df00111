/** The dashboard's entry: one router over every page; each page has its own URL. */
import { render } from "preact";
import { LocationProvider, Route, Router } from "preact-iso";
import { Layout } from "./layout";
import { Login } from "./pages/login";
import { Overview } from "./pages/overview";
import { Tokens } from "./pages/tokens";
import "./style.css";

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
          <Route path="/tokens" component={Tokens} />
          <Route default component={NotFound} />
        </Router>
      </Layout>
    </LocationProvider>
  );
}

render(<App />, document.getElementById("app")!);
