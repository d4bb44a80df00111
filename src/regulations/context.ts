import type { AuthContext } from "../control-plane/context";
import type { ConfigStore } from "../control-plane/config-store";

/** What the Data Regulation API reads: the workspace's destinations (for deletions), behind the API's sign-in. */
export interface RegulationsContext extends AuthContext {
  config: ConfigStore;
}
