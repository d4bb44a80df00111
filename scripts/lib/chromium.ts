/** Debian's headless Chromium through playwright-core, for the scripts that draw or photograph pages. */
import type { Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The machine has no outside network: keep Chromium from reaching for it.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** Renders a self-contained HTML page (no network) to a PNG of the given size. */
export async function renderPng(html: string, path: string, size: { width: number; height: number }): Promise<void> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: size, colorScheme: "light" });
    await page.setContent(html, { waitUntil: "load" });
    await page.screenshot({ path, fullPage: true });
  } finally {
    await browser.close();
  }
}
