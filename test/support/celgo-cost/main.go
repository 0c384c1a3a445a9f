// celgo-cost prints cel-go's actual runtime cost of CEL expressions in the API server's environment
// (apiserver's base environment and CostEstimator, PerCallLimit), to check src/policy/cost against.
//
//	cd test/support/celgo-cost && GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off go build -o /tmp/celgo-cost .
//	/tmp/celgo-cost '{"object": {"l": [1, 2, 3]}}' 'object.l.all(x, x > 0)' ...
//
// Prints one line per expression: expression, result, cost, error (tab-separated).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

func main() {
	var input map[string]any
	json.Unmarshal([]byte(os.Args[1]), &input)
	envSet := environment.MustBaseEnvSet(version.MajorMinor(1, 37))
	env, err := envSet.Env(environment.StoredExpressions)
	if err != nil {
		panic(err)
	}
	env, err = env.Extend(cel.Variable("object", cel.DynType))
	if err != nil {
		panic(err)
	}
	for _, expr := range os.Args[2:] {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			fmt.Println(expr, "COMPILE", iss.Err())
			continue
		}
		prg, err := env.Program(ast, cel.CostTracking(&library.CostEstimator{}), cel.CostLimit(1000000), cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost), cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)))
		if err != nil {
			panic(err)
		}
		out, det, err := prg.Eval(map[string]any{"object": input["object"]})
		var c uint64
		if det != nil && det.ActualCost() != nil {
			c = *det.ActualCost()
		}
		fmt.Printf("%s\t%v\t%d\t%v\n", expr, out, c, err)
	}
}
