package console_test

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// browser returns the path of a Chromium or Chrome, installing Debian's
// chromium (scripts/install-chromium.sh) where none is found and it can;
// the test skips, saying so, only where no browser can be had.
func browser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DSS_CHROMIUM"); p != "" {
		return p
	}
	find := func() string {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
		return ""
	}
	if p := find(); p != "" {
		return p
	}
	out, err := exec.Command("bash", "../../scripts/install-chromium.sh").CombinedOutput()
	t.Logf("scripts/install-chromium.sh: %s", out)
	if p := find(); p != "" {
		return p
	}
	t.Skipf("no Chromium or Chrome to drive, and none could be installed (%v): install Debian's chromium, or set DSS_CHROMIUM to a browser", err)
	return ""
}

// newBrowser starts a headless browser with an empty profile, and returns
// a context of its first tab; it stops when the test ends.
func newBrowser(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting the browser: %v", err)
	}
	return ctx
}

// run runs the steps with a bound, failing the test with what.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		page, _ := eval[string](t, ctx, `document.body.innerText`)
		t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, page)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](t *testing.T, ctx context.Context, expr string) (T, error) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(tctx, chromedp.Evaluate[T](expr))
}

// until waits until the JavaScript expression cond is true.
func until(cond string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(20*time.Second))
}

// byID selects the element of an id.
func byID(id string) chromedp.CSS { return chromedp.CSS("#" + id) }

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const policy = `rules:
  - principals: {usernames: [alice]}
    brokerResources: [{method: Connect}]
    stateStoreResources:
      - {method: ReadWrite, keyType: Pattern, keys: ["app/*"]}
      - {method: Read, keyType: Pattern, keys: ["config/*"]}
  - principals: {usernames: [bob]}
    brokerResources: [{method: Connect}]
    stateStoreResources:
      - {method: ReadWrite, keyType: Pattern, keys: ["*"]}
`

// The console in a real browser: sign in, search, open a value as JSON,
// change it, see another client's change appear without a reload, be
// refused a write that the policy does not grant, on a desktop and on a
// phone's screen.
func TestConsoleInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	users := filepath.Join(t.TempDir(), "users")
	for _, u := range [][2]string{{"alice", "alice-pw"}, {"bob", "bob-pw"}} {
		if err := auth.SetPassword(users, u[0], []byte(u[1])); err != nil {
			t.Fatal(err)
		}
	}
	s := dsstest.StartServer(t, server.Config{
		Users: users, Policy: writeFile(t, "policy.yaml", policy), LoginDelay: time.Millisecond,
		WSListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
	})
	bob := dsstest.DialWith(t, s.Addr(), "bob", dsstest.Login{Username: "bob", Password: "bob-pw"})
	bob.Subscribe(bob.ResponseTopic)
	for k, v := range map[string]string{
		"app/line-1/recipe": `{"flour": 500, "water": 350, "steps": ["mix", "rest", "bake"]}`,
		"app/line-1/state":  "running",
		"app/line-2/state":  "idle",
		"config/oven":       "230",
		"other/secret":      "bob's",
	} {
		if got := bob.Set([]string{k, v}); string(got.Payload) != "+OK\r\n" {
			t.Fatalf("SET %s: %q", k, got.Payload)
		}
	}

	ctx := newBrowser(t, 1280, 860)
	url := "http://" + s.HTTPAddr() + "/"
	run(t, ctx, "sign in",
		chromedp.Navigate(url),
		chromedp.WaitVisible(byID("username")),
		chromedp.SendKeys(byID("username"), "alice"),
		chromedp.SendKeys(byID("password"), "alice-pw"),
		chromedp.Click(byID("signin-button")),
		chromedp.WaitVisible(byID("app")),
		until(`document.getElementById("conn").textContent === "online"`),
	)
	paint, err := eval[float64](t, ctx, `(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first contentful paint of the console: %.0f ms", paint)

	// Search: the listing holds the keys of the pattern that alice may read.
	run(t, ctx, "search",
		chromedp.SetValue(byID("pattern"), "*"),
		chromedp.Click(chromedp.CSS(`#search button[type=submit]`)),
		until(`document.getElementById("key-count").textContent.startsWith("4 keys")`),
	)
	listed, err := eval[string](t, ctx, `document.getElementById("keys").innerText`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(listed, "other/secret") || !strings.Contains(listed, "config/oven") {
		t.Fatalf("alice's listing:\n%s", listed)
	}
	run(t, ctx, "search a pattern",
		chromedp.SetValue(byID("pattern"), "app/*/recipe"),
		chromedp.Click(chromedp.CSS(`#search button[type=submit]`)),
		until(`document.getElementById("key-count").textContent.startsWith("1 key ")`),
	)

	// Open a value, as JSON.
	recipe := `#keys li[data-hex="` + strings.ToUpper(hex.EncodeToString([]byte("app/line-1/recipe"))) + `"]`
	run(t, ctx, "open a value",
		chromedp.Click(chromedp.CSS(recipe)),
		until(`document.getElementById("value").textContent.includes('"flour": 500')`),
		chromedp.Click(chromedp.CSS(`.view[data-view="json"]`)),
		until(`document.getElementById("value").textContent.includes('"steps": [\n    "mix"')`),
		until(`document.getElementById("detail-ttl").textContent === "never" && document.getElementById("detail-fence").textContent === "none"`),
	)

	// Change it.
	run(t, ctx, "change it",
		chromedp.SetValue(byID("edit-value"), `{"flour": 750}`),
		chromedp.Click(byID("save")),
		until(`document.getElementById("alert").textContent.startsWith("Saved")`),
		until(`document.getElementById("value").textContent.includes('"flour": 750')`),
	)
	if got := string(bob.Request(dsstest.Cmd("GET", "app/line-1/recipe")).Payload); !strings.Contains(got, `{"flour": 750}`) {
		t.Fatalf("after the console's SET, GET answers %q", got)
	}

	// Another client's change appears without a reload.
	if got := bob.Set([]string{"app/line-1/recipe", `{"flour": 900}`, "PX", "600000"}); string(got.Payload) != "+OK\r\n" {
		t.Fatalf("bob's SET: %q", got.Payload)
	}
	run(t, ctx, "see another client's change",
		until(`document.getElementById("value").textContent.includes('"flour": 900')`),
		until(`document.getElementById("detail-ttl").textContent.startsWith("in ")`),
	)
	screenshot(t, ctx, "console.png")

	// A write outside alice's policy is refused, and the refusal shown.
	run(t, ctx, "be refused",
		chromedp.SetValue(byID("edit-key"), "config/oven"),
		chromedp.SetValue(byID("edit-value"), "999"),
		chromedp.Click(byID("save")),
		until(`document.getElementById("alert").textContent.includes("not authorized")`),
	)
	screenshot(t, ctx, "console-refused.png")
	if got := string(bob.Request(dsstest.Cmd("GET", "config/oven")).Payload); got != "$3\r\n230\r\n" {
		t.Fatalf("after a refused SET, config/oven is %q", got)
	}

	// Watch a pattern: changes of other clients are logged as they come.
	run(t, ctx, "watch a pattern",
		chromedp.Click(chromedp.CSS(`.tab[data-tab="watch"]`)),
		chromedp.SetValue(byID("watch-target"), "app/line-2/*"),
		chromedp.Click(chromedp.CSS(`#watch button[type=submit]`)),
		until(`document.getElementById("watches").textContent.includes("app/line-2/*")`),
	)
	bob.Set([]string{"app/line-2/state", "running"})
	run(t, ctx, "see the change logged",
		until(`document.getElementById("events").textContent.includes("app/line-2/stateSETrunning")`),
	)

	// The overview: clients and rates.
	run(t, ctx, "overview",
		chromedp.Click(chromedp.CSS(`.tab[data-tab="overview"]`)),
		until(`document.getElementById("st-clients").textContent === "2"`),
		until(`document.getElementById("st-requests").textContent !== "–"`),
	)
	screenshot(t, ctx, "console-overview.png")

	// The page once more, with the browser warm: its own first paint.
	run(t, ctx, "load again", chromedp.Navigate(url), until(`document.getElementById("conn").textContent === "online"`))
	if paint, err = eval[float64](t, ctx, `(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`); err != nil {
		t.Fatal(err)
	}
	t.Logf("first contentful paint of the console, loaded again: %.0f ms", paint)

	// On a phone's screen, nothing is wider than the screen.
	phone := newBrowser(t, 390, 844)
	run(t, phone, "sign in on a phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(3)),
		chromedp.Navigate(url),
		chromedp.WaitVisible(byID("username")),
		chromedp.SendKeys(byID("username"), "alice"),
		chromedp.SendKeys(byID("password"), "alice-pw"),
		chromedp.Click(byID("signin-button")),
		until(`document.getElementById("key-count").textContent.startsWith("4 keys")`),
		chromedp.Click(chromedp.CSS(recipe)),
		until(`document.getElementById("value").textContent.includes("900")`),
	)
	overflow, err := eval[bool](t, phone, `document.documentElement.scrollWidth > window.innerWidth`)
	if err != nil {
		t.Fatal(err)
	}
	if overflow {
		t.Error("on a 390 px wide screen, the page is wider than the screen")
	}
	screenshot(t, phone, "console-phone.png")
}

// screenshot saves the page under the test's temporary directory, and
// into DSS_CONSOLE_SCREENSHOTS when set (docs/console.png comes from
// there).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := t.TempDir()
	if d := os.Getenv("DSS_CONSOLE_SCREENSHOTS"); d != "" {
		dir = d
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
	if len(png) < 1000 {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
}
