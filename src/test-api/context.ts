import type { AuthContext } from "../control-plane/context";
import type { ConfigStore } from "../control-plane/config-store";

/** What the Test API reads: the workspace's destinations and their configs, behind the API's sign-in. */
export interface TestApiContext extends AuthContext {
  config: ConfigStore;
}
