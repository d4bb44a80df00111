// SQL migrations are imported as text so the compiled binary embeds them.
declare module "*.sql" {
  const text: string;
  export default text;
}
