export * from "./control-plane";
export * from "./pipeline";
