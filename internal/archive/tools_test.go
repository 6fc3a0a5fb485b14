package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/bindery-nas/bindery/protocol"
)

// The real readers' verdict on one archive, in the classes classAndMessage
// gives: "pages N", "no_pages", archive_encrypted, archive_incomplete,
// unsupported_compression (with the method the tool names) or "broken"
// (the tool cannot open or test it).

// toolTimeout bounds every tool call: some libarchive fixtures make bsdtar
// spin for minutes.
const toolTimeout = 20 * time.Second

type toolVerdict struct {
	tool, class, detail string
	pages               int      // pages in the tool's listing
	methods             []string // methods the tool could not decode
}

// runTool runs one reader with toolTimeout and returns its standard output
// and error; a timeout is an error of its own.
func runTool(name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	var out, errOut strings.Builder
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out after %v", name, toolTimeout)
	}
	return out.String(), errOut.String(), err
}

// isPageName is Bindery's page rule applied to a tool's entry name.
func isPageName(name string) bool {
	clean, ok := cleanName(name)
	return ok && !isJunk(clean) && IsImageName(clean)
}

func pagesClass(n int) string {
	if n == 0 {
		return "no_pages"
	}
	return fmt.Sprintf("pages %d", n)
}

// sevenZipVerdict asks `7zz l -slt` for the listing and `7zz t` for the
// test, with a wrong password so that encryption fails instead of asking.
func sevenZipVerdict(path string) toolVerdict {
	v := toolVerdict{tool: "7zz"}
	list, listErr, err := runTool("7zz", "l", "-slt", "-pbindery-wrong", "--", path)
	switch {
	case strings.Contains(listErr, "Cannot open encrypted archive"):
		v.class = protocol.ErrArchiveEncrypted
		return v
	case err != nil && strings.Contains(list+listErr, "Missing volume"):
		v.class = protocol.ErrArchiveIncomplete
		return v
	case err != nil && !strings.Contains(list, "\n----------\n"):
		v.class, v.detail = "broken", lastLine(listErr+list)
		return v
	}
	methods, encrypted := map[string]string{}, false
	_, body, _ := strings.Cut(list, "\n----------\n")
	for _, block := range strings.Split(body, "\n\n") {
		f := slt(block)
		if f["Path"] == "" || f["Folder"] == "+" {
			continue
		}
		methods[f["Path"]] = f["Method"]
		encrypted = encrypted || f["Encrypted"] == "+"
		if isPageName(f["Path"]) {
			v.pages++
		}
	}
	if encrypted {
		v.class = protocol.ErrArchiveEncrypted
		return v
	}
	test, testErr, err := runTool("7zz", "t", "-pbindery-wrong", "--", path)
	for _, m := range unsupportedMethod.FindAllStringSubmatch(test+testErr, -1) {
		v.methods = append(v.methods, methods[m[1]])
	}
	switch {
	case err == nil:
		v.class = pagesClass(v.pages)
	case strings.Contains(test+testErr, "Missing volume"):
		v.class = protocol.ErrArchiveIncomplete
	case len(v.methods) > 0:
		v.class = protocol.ErrUnsupportedCompression
	default:
		v.class, v.detail = "broken", lastLine(testErr+test)
	}
	return v
}

var unsupportedMethod = regexp.MustCompile(`(?m)Unsupported Method : (.+)$`)

// slt parses one `7zz l -slt` block of "Key = value" lines.
func slt(block string) map[string]string {
	f := map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		if k, val, ok := strings.Cut(line, " = "); ok {
			f[k] = val
		}
	}
	return f
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// lsarOut is what `lsar -t -j` prints (unar 1.10).
type lsarOut struct {
	Error    int `json:"lsarError"`
	Contents []struct {
		Name       string `json:"XADFileName"`
		Dir        int    `json:"XADIsDirectory"`
		Link       string `json:"XADLinkDestination"`
		Encrypted  int    `json:"XADIsEncrypted"`
		Method     string `json:"XADCompressionName"`
		TestResult string `json:"lsarTestResult"`
		Corrupted  int    `json:"XADIsCorrupted"`
		Incomplete int    `json:"XADIsIncomplete"`
	} `json:"lsarContents"`
}

// lsarVerdict asks `lsar -t -j` (unar reads RAR 1.5 to 5, which Debian's
// 7-Zip cannot).
func lsarVerdict(path string) toolVerdict {
	v := toolVerdict{tool: "lsar"}
	out, errOut, err := runTool("lsar", "-t", "-j", "--", path)
	if strings.Contains(errOut, "requires a password") {
		v.class = protocol.ErrArchiveEncrypted
		return v
	}
	var res lsarOut
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil || res.Error != 0 && len(res.Contents) == 0 {
		v.class, v.detail = "broken", fmt.Sprintf("lsarError %d %v %s", res.Error, err, lastLine(errOut))
		return v
	}
	broken := res.Error != 0
	for _, e := range res.Contents {
		switch {
		case e.Dir != 0 || e.TestResult == "not_tested":
			continue // directories, links
		case e.Encrypted != 0:
			v.class = protocol.ErrArchiveEncrypted
			return v
		case e.Incomplete != 0:
			v.class = protocol.ErrArchiveIncomplete
			return v
		case e.TestResult == "not_supported":
			v.methods = append(v.methods, e.Method)
		case e.TestResult != "ok" && e.TestResult != "no_checksum" || e.Corrupted != 0:
			broken, v.detail = true, e.Name+": "+e.TestResult
		}
		if isPageName(e.Name) {
			v.pages++
		}
	}
	switch {
	case broken:
		v.class = "broken"
	case len(v.methods) > 0:
		v.class = protocol.ErrUnsupportedCompression
	default:
		v.class = pagesClass(v.pages)
	}
	return v
}

// bsdtarPages is bsdtar's listing's page count, the second opinion where
// the first tool cannot open a file Bindery reads.
func bsdtarPages(path string) (string, error) {
	out, errOut, err := runTool("bsdtar", "-tf", path)
	if err != nil {
		return "", fmt.Errorf("bsdtar: %v: %s", err, lastLine(errOut))
	}
	n := 0
	for _, name := range strings.Split(out, "\n") {
		if name != "" && !strings.HasSuffix(name, "/") && isPageName(name) {
			n++
		}
	}
	return pagesClass(n), nil
}

// bsdtarEncrypted is bsdtar's second opinion on encryption where the
// first tool cannot parse the file (Debian's lsar 1.10 and RAR5
// encryption): it extracts to nowhere and says whether encryption stopped
// it.
func bsdtarEncrypted(path string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	var errOut strings.Builder
	cmd := exec.CommandContext(ctx, "bsdtar", "-xOf", path)
	cmd.Stdout, cmd.Stderr = io.Discard, &errOut
	_ = cmd.Run() // the verdict is in what it says
	return ctx.Err() == nil && strings.Contains(errOut.String(), "Encryption is not supported")
}
