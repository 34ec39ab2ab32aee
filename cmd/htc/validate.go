package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
)

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", "htc validate -f config.yaml [--test NAME]... [-o text|json]",
		"Validate an HAProxyTemplateConfig and run its embedded validation tests.\nExits 0 only when every selected test ran and passed, 1 when one failed,\n2 when the config itself is invalid.", stdout, stderr)
	var (
		configPath string
		tests      stringList
		output     string
		workers    int
		timeout    time.Duration
		haproxy    string
	)
	configFlag(fs, &configPath)
	fs.Var(&tests, "test", "run only this test (repeatable, or comma-separated)")
	outputFlag(fs, &output, "output format: text or json")
	fs.IntVar(&workers, "workers", 2, "tests run in parallel")
	fs.DurationVar(&timeout, "timeout", testrun.DefaultTimeout, "overall deadline for the test run; tests not finished count as failed")
	fs.StringVar(&haproxy, "haproxy", envDefault("HTC_HAPROXY", "haproxy"), "haproxy binary used by haproxy_valid assertions (env HTC_HAPROXY)")
	allowed := allowedDirectivesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := oneOf("output", output, "text", "json"); err != nil {
		return err
	}
	env, wait, err := checkingEnv(haproxy, allowed.stringList)
	if err != nil {
		return err
	}
	defer wait()
	o, err := loadOffline(configPath, env)
	if err != nil {
		return err
	}
	report, err := o.pipeline.RunTests(ctx, testrun.Options{Workers: workers, Timeout: timeout, Only: tests})
	if ctx.Err() != nil {
		return errInterrupted // unfinished tests failed because of the signal
	}
	if err != nil {
		return usageError{err}
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		printReport(stdout, report)
	}
	if !report.OK() {
		return rejectedError{}
	}
	return nil
}

func printReport(w io.Writer, r *testrun.Report) {
	for _, res := range r.Results {
		mark := "PASS"
		if res.Status != testrun.StatusPassed {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s  %s (%s)\n", mark, res.Name, res.Duration.Round(time.Millisecond))
		if p := res.Problem(); p != "" {
			fmt.Fprintf(w, "      %s\n", p)
		}
	}
	if len(r.Results) == 0 {
		fmt.Fprintln(w, "no validation tests in spec.validationTests")
	}
	fmt.Fprintf(w, "%d/%d validation tests passed in %s\n", r.Passed, r.Total, r.Duration.Round(time.Millisecond))
}
