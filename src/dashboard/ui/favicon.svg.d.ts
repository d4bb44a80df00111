/** routes.ts imports the icon as text (`with { type: "text" }`): the binary embeds it as a string. */
declare const source: string;
export default source;
