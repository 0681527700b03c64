/**
 * What the browser tests share: the browser-side scripts bundled by esbuild (once per process), Chromium found and
 * launched through playwright-core, and a screenshot of the page after each test, named for it (`-failed` when it failed).
 */
// test:fast: needs Chromium
import { existsSync } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { chromium, type Browser, type Page } from 'playwright-core'

const HERE = path.dirname(fileURLToPath(import.meta.url))
/** Where screenshots go: inside `.tap/`, which git ignores. */
export const SCREENSHOTS = path.resolve(HERE, '../../.tap/screenshots')

/** The scripts that run in the browser: the host page's, the sandbox proxy's and the view's. */
export type Script = 'host' | 'sandbox' | 'view'

const bundles = new Map<Script, Promise<string>>()

/**
 * `test/browser/<name>.ts` bundled with everything it imports, as one IIFE for a `<script>`. Safe to inline:
 * no `</script` is left in it.
 */
export function bundle (name: Script): Promise<string> {
  let made = bundles.get(name)
  if (made === undefined) {
    made = build({
      entryPoints: [path.join(HERE, `${name}.ts`)],
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      target: 'chrome120',
      minify: true,
      legalComments: 'none',
      logLevel: 'silent',
    }).then((result) => result.outputFiles[0].text.replace(/<\/(script)/gi, '<\\/$1'))
    bundles.set(name, made)
  }
  return made
}

/** The host page: a transcript of what the model did, and the views it rendered; its script is `/host.js`. */
export const HOST_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mocapi test host</title>
<link rel="icon" href="data:,">
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 16px; background: #f4f4f6; color: #222; }
  h1 { font-size: 18px; margin: 0 0 8px; }
  #transcript p { margin: 4px 0; padding: 4px 8px; background: #fff; border-left: 3px solid #99a; }
  #transcript p.asked { border-color: #c80; }
  #transcript p.call { border-color: #27c; }
  iframe.view { display: block; width: 100%; height: 220px; margin-top: 12px; border: 0; background: #fff; }
  iframe.view.bordered { border: 1px solid #bbc; border-radius: 8px; }
</style>
</head>
<body>
<h1>mocapi test host</h1>
<div id="transcript"></div>
<div id="views"></div>
<script src="/host.js"></script>
</body>
</html>
`

/** The sandbox proxy page, whose inner iframe fills it; its script is inline, so it is one request. */
export async function sandboxPage (): Promise<string> {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sandbox proxy</title>
<style>html, body { margin: 0; height: 100%; overflow: hidden; } iframe { display: block; border: 0; width: 100%; height: 100%; }</style>
</head>
<body>
<script>${await bundle('sandbox')}</script>
</body>
</html>
`
}

/** The counter view's document: its markup, with the bundled view script (the official \`App\`) inline. */
export async function counterView (): Promise<string> {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Counter</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; padding: 12px 16px; }
  h2 { font-size: 16px; margin: 0 0 8px; }
  #count { font-size: 28px; font-weight: 600; }
  #status { color: #555; min-height: 1.4em; }
  #csp { font-size: 11px; color: #777; white-space: pre-wrap; margin: 0; }
</style>
</head>
<body>
<h2>Counter view</h2>
<p>Count: <output id="count">…</output></p>
<button id="bump" type="button">Bump</button>
<p id="status"></p>
<pre id="csp"></pre>
<script>${await bundle('view')}</script>
</body>
</html>
`
}

/**
 * The Chromium to drive: `CHROMIUM_PATH` when set (and nothing else, so a wrong one is not silently replaced), else
 * Debian's or another usual place; undefined when there is none.
 */
export function findChromium (): string | undefined {
  const wanted = process.env.CHROMIUM_PATH
  const candidates = wanted !== undefined && wanted !== '' ? [wanted] : ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']
  return candidates.find((candidate) => existsSync(candidate))
}

type Test = { teardown: (fn: () => unknown) => void }

/** A headless Chromium, closed when the test ends. */
export async function launch (t: Test, executablePath: string): Promise<Browser> {
  // --no-sandbox: containers and CI runners rarely allow Chromium's own sandbox (the iframe sandboxes still apply).
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] })
  t.teardown(() => browser.close())
  return browser
}

/** A file name made of a test's name. */
export function slug (name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 120).replace(/^-+|-+$/g, '')
}

/**
 * Runs `body`, then writes a full-page screenshot (the iframes drawn in) to `.tap/screenshots/<name>.png`, or
 * `<name>-failed.png` when `body` threw or an assertion of the test failed.
 */
export async function screenshotAfter (
  t: { name: string, passing (): boolean, comment (...args: unknown[]): void },
  page: Page,
  body: () => Promise<void>
): Promise<void> {
  let failed = false
  try {
    await body()
  } catch (error) {
    failed = true
    throw error
  } finally {
    failed ||= !t.passing()
    await mkdir(SCREENSHOTS, { recursive: true })
    const file = path.join(SCREENSHOTS, `${slug(t.name)}${failed ? '-failed' : ''}.png`)
    // The other outcome's screenshot, from an earlier run, would tell a wrong story.
    await rm(path.join(SCREENSHOTS, `${slug(t.name)}${failed ? '' : '-failed'}.png`), { force: true })
    try {
      await page.screenshot({ path: file, fullPage: true, timeout: 5_000 })
      t.comment(`screenshot: ${path.relative(process.cwd(), file)}`)
    } catch (error) {
      t.comment(`no screenshot: ${(error as Error).message}`)
    }
  }
}
