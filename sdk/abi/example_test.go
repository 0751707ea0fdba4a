package abi_test

import (
	"encoding/hex"
	"fmt"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// The score input of two clusters for a plugin that reads the label "env" and
// allocatable CPU: the worked example of PLUGINS.md.
func ExampleEncodeScoreInput() {
	decl := abi.PrioritizerInputs{
		Labels:    []string{"env"},
		Resources: []abi.ResourceInput{{Kind: abi.ResourceAllocatable, Name: "cpu"}},
	}
	clusters := abi.ClusterList{
		{Name: "east", Labels: map[string]string{"env": "prod"}, Allocatable: map[string]int64{"cpu": 4000}},
		{Name: "west", Allocatable: map[string]int64{"cpu": 500}},
	}
	b, err := abi.EncodeScoreInput(nil, &decl, clusters)
	if err != nil {
		panic(err)
	}
	fmt.Print(hex.Dump(b))
	in, _ := abi.DecodeScoreInput(b)
	env, cpu := in.LabelColumn("env"), in.ResourceColumn(abi.ResourceAllocatable, "cpu")
	for i := 0; i < in.Len(); i++ {
		e, hasEnv := env.Get(i)
		c, _ := cpu.Get(i)
		fmt.Println(i, e, hasEnv, c)
	}
	// A Go guest answers with one int8 per cluster; any guest may send int64s.
	fmt.Printf("% x\n", abi.AppendCompactScores(nil, []int64{100, -250}))
	// Output:
	// 00000000  46 4c 50 53 01 00 00 00  02 00 00 00 03 00 00 00  |FLPS............|
	// 00000010  03 00 00 00 0a 00 00 00  01 00 00 00 01 00 00 00  |................|
	// 00000020  68 00 00 00 01 00 00 00  00 00 00 00 03 00 00 00  |h...............|
	// 00000030  06 00 00 00 0a 00 00 00  65 6e 76 63 70 75 70 72  |........envcpupr|
	// 00000040  6f 64 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |od..............|
	// 00000050  00 04 00 00 01 00 00 00  02 ff 00 00 00 00 00 00  |................|
	// 00000060  a0 0f 00 00 f4 01 00 00                           |........|
	// 0 prod true 4000
	// 1  false 500
	// 64 9c
}
