// Command gosec runs gosec's rules and analysers over the packages named
// on the command line, the way `gosec -quiet -exclude-generated` does:
// silent when it finds nothing, otherwise the findings as text and exit
// status 1. It drives gosec's own library rather than installing
// cmd/gosec, which also links three AI vendors' SDKs for its optional
// autofix; compiling those took more CPU on a fresh machine than the
// analysers themselves (see the Makefile, where this and staticcheck are
// built from one module and so share golang.org/x/tools).
package main

import (
	"flag"
	"io"
	"log"
	"os"
	"runtime"

	"github.com/securego/gosec/v2"
	"github.com/securego/gosec/v2/analyzers"
	"github.com/securego/gosec/v2/report"
	"github.com/securego/gosec/v2/rules"
)

func main() {
	excluded := []string{"vendor", `\.git/`}
	flag.Func("exclude-dir", "leave out packages under this folder (repeatable)", func(dir string) error {
		excluded = append(excluded, dir)
		return nil
	})
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: gosec [-exclude-dir DIR]... PACKAGES (./... for all)")
	}

	config := gosec.NewConfig()
	const scanTests, excludeGenerated, trackSuppressions = false, true, false
	analyzer := gosec.NewAnalyzer(config, scanTests, excludeGenerated, trackSuppressions, runtime.NumCPU(), log.New(io.Discard, "", 0))
	analyzer.LoadRules(rules.Generate(trackSuppressions).RulesInfo())
	analyzer.LoadAnalyzers(analyzers.Generate(trackSuppressions).AnalyzersInfo())

	excludedDirs := gosec.ExcludedDirsRegExp(excluded)
	var packages []string
	for _, pattern := range flag.Args() {
		paths, err := gosec.PackagePaths(pattern, excludedDirs)
		if err != nil {
			log.Fatalf("packages of %s: %v", pattern, err)
		}
		packages = append(packages, paths...)
	}
	if err := analyzer.Process(nil, packages...); err != nil {
		log.Fatalf("gosec: %v", err)
	}
	issues, metrics, errs := analyzer.Report()
	if len(issues) == 0 && len(errs) == 0 {
		return
	}
	if err := report.CreateReport(os.Stdout, "text", false, flag.Args(), gosec.NewReportInfo(issues, metrics, errs)); err != nil {
		log.Fatalf("gosec report: %v", err)
	}
	os.Exit(1)
}
