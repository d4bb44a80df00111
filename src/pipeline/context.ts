import type { AuthContext } from "../control-plane/context";
import type { StatsStore } from "./store";

/** What the deliveries API and the overview read: the stats store, behind the API's sign-in. */
export interface PipelineApiContext extends AuthContext {
  stats: StatsStore;
}
