package demo

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Main is the demo command: it finds the repository, builds the agents through start-agent.sh
// when stale, runs the story and prints the timeline. Exit 0 only when every step's facts held.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print only the final timeline and where the receipt is")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 2
	}
	home := os.Getenv("DW_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			fmt.Fprintln(stderr, "demo: set DW_HOME:", err)
			return 2
		}
		home = filepath.Join(h, ".dataworkers")
	}
	if err := BuildAgents(ctx, root, stderr); err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 2
	}
	start := time.Now()
	var live io.Writer = stdout
	if *quiet {
		live = nil
	} else {
		fmt.Fprintln(stdout, "Data Workers — the afternoon, replayed on this machine")
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, Header())
	}
	res, err := Run(ctx, Options{Root: root, Bin: filepath.Join(root, "bin"), Home: home, Out: live, StoreURL: os.Getenv("DW_STORE_URL")})
	if res != nil {
		writeTimeline(res)
		if *quiet {
			res.Timeline.Write(stdout)
		}
	}
	fmt.Fprintln(stdout)
	if err != nil {
		fmt.Fprintf(stdout, "FAILED after %.1fs: %v\n", time.Since(start).Seconds(), err)
		if res != nil {
			fmt.Fprintf(stdout, "Details: every tool result under %s, agent logs under %s\n", filepath.Join(res.Dir, "calls"), filepath.Join(res.Dir, "logs"))
		}
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	fmt.Fprintf(stdout, "Every step's facts held (%.1fs). Incident #%d resolved; receipt #%d verifies.\n", time.Since(start).Seconds(), res.IncidentID, res.ReceiptSeq)
	fmt.Fprintf(stdout, "Receipt:  %s\n          %s\n", res.ReceiptMD, res.ReceiptJSON)
	fmt.Fprintf(stdout, "Timeline: %s\nConfig:   %s (its stand-ins are gone now)\nDetails:  every tool result under %s\n",
		filepath.Join(res.Dir, "timeline.txt"), res.Config, filepath.Join(res.Dir, "calls"))
	return 0
}

func writeTimeline(res *Result) {
	var b strings.Builder
	res.Timeline.Write(&b)
	_ = os.WriteFile(filepath.Join(res.Dir, "timeline.txt"), []byte(b.String()), 0o600)
	if raw, err := json.MarshalIndent(res.Timeline, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(res.Dir, "timeline.json"), raw, 0o600)
	}
}

// repoRoot is the repository the demo binary was built in (bin/demo's parent), else the one
// holding the working directory.
func repoRoot() (string, error) {
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			if root, err := FindRoot(filepath.Dir(exe)); err == nil {
				return root, nil
			}
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return FindRoot(wd)
}

// BuildAgents builds each agent through start-agent.sh (which rebuilds only when stale), as a
// client's first start would. On cancel the script gets SIGINT and is waited for, so its go
// build never outlives the demo and its temporary binary is removed by the script.
func BuildAgents(ctx context.Context, root string, stderr io.Writer) error {
	for _, a := range AgentNames {
		if err := ctx.Err(); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "start-agent.sh"), a, "version")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
		cmd.Stderr = stderr
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), a+" ") {
			return fmt.Errorf("building %s through start-agent.sh failed: %v (%q)", a, err, out)
		}
	}
	return nil
}
