import type { AuthContext } from "../control-plane/context";

/** What the transformation test run reads: the workspace's libraries, from the control plane's store. */
export type TransformationsContext = AuthContext;
