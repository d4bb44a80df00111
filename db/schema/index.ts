export * from "./control-plane";
export * from "./pipeline";
export * from "./regulations";
export * from "./warehouse";
export * from "./sources";
export * from "./tracking";
