export * from "./control-plane";
export * from "./pipeline";
export * from "./regulations";
export * from "./warehouse";
export * from "./cluster";
export * from "./sources";
export * from "./tracking";
