// goyaml reads a YAML stream on standard input the way Kubernetes does
// (sigs.k8s.io/yaml: go-yaml v2, then the conversion to JSON) and prints
// the documents as one JSON array on standard output; an empty document
// is null.  Duplicate keys are an error (strict mode).  Exit 1 with the
// reason on standard error when go-yaml refuses the input.
//
// Built in GOPATH mode from Debian's golang-gopkg-yaml.v2-dev:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o goyaml .
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	yaml "gopkg.in/yaml.v2"
)

// toJSONable turns go-yaml's map[interface{}]interface{} into JSON's
// map[string]interface{}, naming keys as sigs.k8s.io/yaml does.
func toJSONable(v interface{}) (interface{}, error) {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, item := range t {
			var key string
			switch kt := k.(type) {
			case string:
				key = kt
			case int:
				key = strconv.Itoa(kt)
			case int64:
				key = strconv.FormatInt(kt, 10)
			case uint64:
				key = strconv.FormatUint(kt, 10)
			case float64:
				key = strconv.FormatFloat(kt, 'g', -1, 64)
			case bool:
				key = strconv.FormatBool(kt)
			default:
				return nil, fmt.Errorf("unsupported map key %#v", k)
			}
			c, err := toJSONable(item)
			if err != nil {
				return nil, err
			}
			out[key] = c
		}
		return out, nil
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, item := range t {
			c, err := toJSONable(item)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

func main() {
	dec := yaml.NewDecoder(os.Stdin)
	dec.SetStrict(true)
	docs := []interface{}{}
	for {
		var v interface{}
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		j, err := toJSONable(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		docs = append(docs, j)
	}
	out, err := json.Marshal(docs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
	os.Stdout.Write([]byte("\n"))
}
