/**
 * The console's script (bundled by src/http/console/assets.ts into /console/app.js): one for both pages, the
 * runs at `/` and a run at `/runs/:id/console`, chosen by the path once the server answers the token.
 */
import { $, api, keepFragmentToken, report, setupLogin, token, type Settings } from "./common.js";
import { runView } from "./run-view.js";
import { runsView } from "./runs-view.js";

async function boot() {
  let settings: Settings;
  try {
    settings = await api<Settings>("GET", "/console/settings");
  } catch (e) {
    return report("The console could not reach its server", e);
  }
  $("login").hidden = true;
  $("main").hidden = false;
  $("signout").hidden = !token();
  const m = /^\/runs\/([^/]+)\/console$/.exec(location.pathname);
  if (m) runView(settings, decodeURIComponent(m[1]));
  else runsView(settings);
}
keepFragmentToken();
setupLogin(() => void boot());
void boot();
