package compat_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// diffRule is one registry diff rule in our own example: the differences the registry reports
// from original to update (type and path, as it spells them) and whether the pair is compatible.
type diffRule struct {
	rule             string // the registry rule the case follows
	original, update string
	want             []string // "TYPE #/path"; order-insensitive
	compatible       bool
	policy           compat.Policy
}

const d2020 = `"$schema":"https://json-schema.org/draft/2020-12/schema",`

func jsonDiffStrings(t *testing.T, o, u string, policy compat.Policy) ([]string, bool) {
	t.Helper()
	if policy == "" {
		policy = compat.Strict
	}
	ok := true
	got := []string{}
	for _, d := range compat.JSONDiff(mustParse(t, schema.JSON, o), mustParse(t, schema.JSON, u), policy) {
		got = append(got, d.Type+" "+d.Path)
		ok = ok && d.Compatible
	}
	return got, ok
}

func checkDiffRules(t *testing.T, rules []diffRule, diff func(t *testing.T, o, u string, p compat.Policy) ([]string, bool)) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.rule, func(t *testing.T) {
			got, ok := diff(t, r.original, r.update, r.policy)
			want := append([]string{}, r.want...)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) || ok != r.compatible {
				t.Fatalf("got %v compatible=%v\nwant %v compatible=%v", got, ok, want, r.compatible)
			}
		})
	}
}

// Draft 2020-12 arrays: prefixItems is the tuple, items is what follows it (or, alone, every
// item), and unevaluatedItems closes the model as additionalItems false does.
var jsonArrayRules = []diffRule{
	{rule: "a tuple position retyped is TYPE_CHANGED at items/N",
		original: `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]}`,
		update:   `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"},{"type":"boolean"}]}`,
		want:     []string{"TYPE_CHANGED #/items/1"}},
	{rule: "a tuple position added after a closed tuple (items false) is ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
		original: `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"}],"items":false}`,
		update:   `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false}`,
		want:     []string{"ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"}, compatible: true},
	{rule: "a tuple position added that asks more than items is ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
		original: `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"}}`,
		update:   `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"},{"type":"string","maxLength":9}],"items":{"type":"string"}}`,
		want:     []string{"MAX_LENGTH_ADDED #/items/1/maxLength", "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}},
	{rule: "items without prefixItems covers every item: retyping it is TYPE_CHANGED at items",
		original: `{` + d2020 + `"type":"array","items":{"type":"integer"}}`,
		update:   `{` + d2020 + `"type":"array","items":{"type":"string"}}`,
		want:     []string{"TYPE_CHANGED #/items"}},
	{rule: "items false alone forbids every item: true to false is ADDITIONAL_ITEMS_REMOVED",
		original: `{` + d2020 + `"type":"array","items":true}`,
		update:   `{` + d2020 + `"type":"array","items":false}`,
		want:     []string{"ADDITIONAL_ITEMS_REMOVED #/additionalItems"}},
	{rule: "unevaluatedItems false closes the tuple: removing a position is ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
		original: `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"unevaluatedItems":false}`,
		update:   `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"}],"unevaluatedItems":false}`,
		want:     []string{"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"}},
	{rule: "unevaluatedItems as a schema covers a removed position",
		original: `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"unevaluatedItems":{"type":"string"}}`,
		update:   `{` + d2020 + `"type":"array","prefixItems":[{"type":"integer"}],"unevaluatedItems":{"type":"string"}}`,
		want:     []string{"ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}, compatible: true},
	{rule: "unevaluatedItems false added is UNEVALUATED_ITEMS_REMOVED, and dropped again UNEVALUATED_ITEMS_ADDED",
		original: `{` + d2020 + `"type":"array","unevaluatedItems":false}`,
		update:   `{` + d2020 + `"type":"array"}`,
		want:     []string{"UNEVALUATED_ITEMS_ADDED #/unevaluatedItems"}, compatible: true},
	{rule: "minContains raised is MIN_CONTAINS_INCREASED, maxContains raised MAX_CONTAINS_INCREASED",
		original: `{` + d2020 + `"type":"array","contains":{"type":"integer"},"minContains":1,"maxContains":3}`,
		update:   `{` + d2020 + `"type":"array","contains":{"type":"integer"},"minContains":2,"maxContains":5}`,
		want:     []string{"MIN_CONTAINS_INCREASED #/minContains", "MAX_CONTAINS_INCREASED #/maxContains"}},
	{rule: "maxContains removed and minContains lowered are compatible",
		original: `{` + d2020 + `"type":"array","contains":{"type":"integer"},"minContains":2,"maxContains":3}`,
		update:   `{` + d2020 + `"type":"array","contains":{"type":"integer"},"minContains":1}`,
		want:     []string{"MIN_CONTAINS_DECREASED #/minContains", "MAX_CONTAINS_REMOVED #/maxContains"}, compatible: true},
	// Draft-07 spells the tuple as items and what follows as additionalItems.
	{rule: "draft-07 additionalItems true to false is ADDITIONAL_ITEMS_REMOVED",
		original: `{"type":"array","items":[{"type":"integer"}],"additionalItems":true}`,
		update:   `{"type":"array","items":[{"type":"integer"}],"additionalItems":false}`,
		want:     []string{"ADDITIONAL_ITEMS_REMOVED #/additionalItems"}},
	{rule: "draft-07 additionalItems schema retyped is TYPE_CHANGED at additionalItems",
		original: `{"type":"array","items":[{"type":"integer"}],"additionalItems":{"type":"string"}}`,
		update:   `{"type":"array","items":[{"type":"integer"}],"additionalItems":{"type":"boolean"}}`,
		want:     []string{"TYPE_CHANGED #/additionalItems"}},
	{rule: "draft-07 removing a tuple item additionalItems covers is compatible",
		original: `{"type":"array","items":[{"type":"integer"},{"type":"string"}],"additionalItems":{"type":"string"}}`,
		update:   `{"type":"array","items":[{"type":"integer"}],"additionalItems":{"type":"string"}}`,
		want:     []string{"ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}, compatible: true},
	{rule: "draft-07 adding a tuple item additionalItems does not cover is not",
		original: `{"type":"array","items":[{"type":"integer"}],"additionalItems":{"type":"string"}}`,
		update:   `{"type":"array","items":[{"type":"integer"},{"type":"boolean"}],"additionalItems":{"type":"string"}}`,
		want:     []string{"TYPE_CHANGED #/items/1", "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}},
	{rule: "an array gaining an items schema is SCHEMA_ADDED at items",
		original: `{"type":"array"}`, update: `{"type":"array","items":{"type":"string"}}`,
		want: []string{"SCHEMA_ADDED #/items"}},
}

// Objects: unevaluatedProperties closes or partially opens the content model like
// additionalProperties; dependentRequired and dependentSchemas are the registry's dependencies.
var jsonObjectRules = []diffRule{
	{rule: "unevaluatedProperties false closes the model: an optional property added is OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
		original: `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"unevaluatedProperties":false}`,
		want:     []string{"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"}, compatible: true},
	{rule: "a property removed from a model closed by unevaluatedProperties is PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
		original: `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"unevaluatedProperties":false}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false}`,
		want:     []string{"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"}},
	{rule: "the same removal passes under LENIENT",
		original: `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"unevaluatedProperties":false}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false}`,
		want:     []string{"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"}, compatible: true, policy: compat.Lenient},
	{rule: "unevaluatedProperties as a schema covers an added property of its type",
		original: `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":{"type":"integer"}}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"}},"unevaluatedProperties":{"type":"integer"}}`,
		want:     []string{"PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/n", "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/n"}, compatible: true},
	{rule: "unevaluatedProperties false added to an open model is UNEVALUATED_PROPERTIES_REMOVED",
		original: `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}}}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false}`,
		want:     []string{"UNEVALUATED_PROPERTIES_REMOVED #/unevaluatedProperties"}},
	{rule: "unevaluatedProperties narrowed to a schema is UNEVALUATED_PROPERTIES_NARROWED, which LENIENT accepts",
		original: `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}}}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":{"type":"string"}}`,
		want:     []string{"UNEVALUATED_PROPERTIES_NARROWED #/unevaluatedProperties"}, compatible: true, policy: compat.Lenient},
	{rule: "dependentRequired narrowed is DEPENDENCY_ARRAY_NARROWED",
		original: `{` + d2020 + `"type":"object","properties":{"a":{},"b":{},"c":{}},"dependentRequired":{"a":["b","c"]}}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{},"b":{},"c":{}},"dependentRequired":{"a":["b"]}}`,
		want:     []string{"DEPENDENCY_ARRAY_NARROWED #/dependencies/a"}, compatible: true},
	{rule: "dependentSchemas added is DEPENDENCY_SCHEMA_ADDED",
		original: `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}}}`,
		update:   `{` + d2020 + `"type":"object","properties":{"a":{"type":"string"}},"dependentSchemas":{"a":{"required":["b"]}}}`,
		want:     []string{"DEPENDENCY_SCHEMA_ADDED #/dependencies/a"}},
}

// The type is inferred from the keywords when "type" is absent, as the registry's loader does.
var jsonInferenceRules = []diffRule{
	{rule: "properties make an object: a property retyped is TYPE_CHANGED there",
		original: `{"properties":{"a":{"type":"string"}}}`, update: `{"properties":{"a":{"type":"integer"}}}`,
		want: []string{"TYPE_CHANGED #/properties/a"}},
	{rule: "required alone makes an object: a required property with no schema on both sides",
		original: `{"required":["a"],"properties":{"a":{}}}`, update: `{"properties":{"a":{}}}`,
		want: []string{"REQUIRED_ATTRIBUTE_REMOVED #/required/a"}, compatible: true},
	{rule: "dependencies make an object",
		original: `{"dependencies":{"a":["b"]}}`, update: `{"dependencies":{"a":["b","c"]}}`,
		want: []string{"DEPENDENCY_ARRAY_EXTENDED #/dependencies/a"}},
	{rule: "items makes an array, which is not a string",
		original: `{"items":{"type":"string"}}`, update: `{"type":"string"}`,
		want: []string{"TYPE_CHANGED #/"}},
	{rule: "minLength makes a string: raising it is MIN_LENGTH_INCREASED",
		original: `{"minLength":2}`, update: `{"minLength":4}`,
		want: []string{"MIN_LENGTH_INCREASED #/minLength"}},
	{rule: "minimum makes a number: lowering it is MINIMUM_DECREASED",
		original: `{"minimum":2}`, update: `{"minimum":0}`,
		want: []string{"MINIMUM_DECREASED #/minimum"}, compatible: true},
}

// Combined types: the registry's criterion rules, narrowing named after the update's criterion,
// duplicates collapsed, and the best pairing of subschemas; paths at the combined node ("#/").
var jsonCombinedRules = []diffRule{
	{rule: "a single oneOf subschema becoming a single allOf is COMBINED_TYPE_EXTENDED",
		original: `{"oneOf":[{"type":"string"}]}`, update: `{"allOf":[{"type":"string"}]}`,
		want: []string{"COMBINED_TYPE_EXTENDED #/"}, compatible: true},
	{rule: "two oneOf subschemas becoming an allOf is COMBINED_TYPE_CHANGED",
		original: `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, update: `{"allOf":[{"type":"string"},{"type":"integer"}]}`,
		want: []string{"COMBINED_TYPE_CHANGED #/"}},
	{rule: "anything may become anyOf: COMBINED_TYPE_EXTENDED",
		original: `{"allOf":[{"type":"string"},{"maxLength":3}]}`, update: `{"anyOf":[{"type":"string"},{"maxLength":3}]}`,
		want: []string{"COMBINED_TYPE_EXTENDED #/"}, compatible: true},
	{rule: "a sum losing a branch is SUM_TYPE_NARROWED",
		original: `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, update: `{"anyOf":[{"type":"string"}]}`,
		want: []string{"SUM_TYPE_NARROWED #/"}},
	{rule: "a product losing a part is PRODUCT_TYPE_NARROWED",
		original: `{"allOf":[{"type":"string"},{"maxLength":3}]}`, update: `{"allOf":[{"type":"string"}]}`,
		want: []string{"PRODUCT_TYPE_NARROWED #/"}, compatible: true},
	{rule: "narrowing is named after the old keyword: an allOf that lost a part as an anyOf is PRODUCT_TYPE_NARROWED",
		original: `{"allOf":[{"type":"string"},{"maxLength":3}]}`, update: `{"anyOf":[{"type":"string"}]}`,
		want: []string{"COMBINED_TYPE_EXTENDED #/", "PRODUCT_TYPE_NARROWED #/"}, compatible: true},
	{rule: "an allOf that became one of its parts is PRODUCT_TYPE_NARROWED",
		original: `{"allOf":[{"type":"string"},{"maxLength":3}]}`, update: `{"type":"string"}`,
		want: []string{"PRODUCT_TYPE_NARROWED #/"}, compatible: true},
	{rule: "duplicate subschemas collapse before counting",
		original: `{"oneOf":[{"type":"string"},{"type":"string"},{"type":"null"}]}`, update: `{"oneOf":[{"type":"null"},{"type":"string"}]}`,
		want: []string{}, compatible: true},
	{rule: "the best pairing, not the first fit, decides",
		original: `{"oneOf":[{"type":"string","maxLength":5},{"type":"string"}]}`,
		update:   `{"oneOf":[{"type":"string"},{"type":"string","maxLength":10}]}`,
		want:     []string{"MAX_LENGTH_INCREASED #/oneOf/0/maxLength"}, compatible: true},
	{rule: "a subschema's difference is pathed under the old keyword and position",
		original: `{"allOf":[{"type":"string"},{"enum":["a"]}]}`, update: `{"allOf":[{"enum":["a","b"]},{"type":"string"}]}`,
		want: []string{"ENUM_ARRAY_EXTENDED #/allOf/1/enum"}, compatible: true},
	{rule: "a plain schema matched to a single subschema reports at the node, not at oneOf/0",
		original: `{"type":"string","maxLength":4}`, update: `{"oneOf":[{"type":"string"}]}`,
		want: []string{"MAX_LENGTH_REMOVED #/maxLength"}, compatible: true},
	{rule: "a combinator beside properties is an allOf of both: a property retyped still shows",
		original: `{"type":"object","properties":{"id":{"type":"string"}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`,
		update:   `{"type":"object","properties":{"id":{"type":"integer"}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`,
		// The best pairing reads the old object through a oneOf branch (compatible), but nothing new
		// reads the old oneOf with the retyped id beside it.
		want: []string{"COMBINED_TYPE_SUBSCHEMAS_CHANGED #/", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/allOf/0/properties/id", "SUM_TYPE_EXTENDED #/allOf/0"}},
	{rule: "a not beside a type is an allOf of both: the type change shows",
		original: `{"type":"string","not":{"enum":["x"]}}`, update: `{"type":"integer","not":{"enum":["x"]}}`,
		want: []string{"COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"}},
	{rule: "the root is spelled #/",
		original: `{"type":"string"}`, update: `{"type":"boolean"}`,
		want: []string{"TYPE_CHANGED #/"}},
	{rule: "a $ref to a $ref is followed to the schema behind it",
		original: `{"type":"string"}`, update: `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"string"}}}`,
		want: []string{}, compatible: true},
}

func TestJSONSchemaDiffFollowsTheRegistryRules(t *testing.T) {
	for name, rules := range map[string][]diffRule{"arrays": jsonArrayRules, "objects": jsonObjectRules, "inference": jsonInferenceRules, "combined": jsonCombinedRules} {
		t.Run(name, func(t *testing.T) { checkDiffRules(t, rules, jsonDiffStrings) })
	}
}

func protoDiffStrings(t *testing.T, o, u string, _ compat.Policy) ([]string, bool) {
	t.Helper()
	ok := true
	got := []string{}
	for _, d := range compat.ProtobufDiff(mustParse(t, schema.Protobuf, o), mustParse(t, schema.Protobuf, u)) {
		got = append(got, d.Type+" "+d.Path)
		ok = ok && d.Compatible
	}
	return got, ok
}

// Oneofs are judged by their members' field numbers: a member that is still somewhere in the
// message moved, it was not removed.
var protoOneofRules = []diffRule{
	{rule: "a oneof renamed with the same members is ONEOF_REMOVED and ONEOF_ADDED",
		original: proto(`message M { oneof pay { string card = 1; string iban = 2; } }`),
		update:   proto(`message M { oneof method { string card = 1; string iban = 2; } }`),
		want:     []string{"ONEOF_REMOVED #/M/pay", "ONEOF_ADDED #/M/method"}, compatible: true},
	{rule: "a field moved out of a deleted oneof into an existing one is ONEOF_FIELD_ADDED there",
		original: proto(`message M { oneof a { string x = 1; } oneof b { string y = 2; } }`),
		update:   proto(`message M { oneof b { string y = 2; string x = 1; } }`),
		want:     []string{"ONEOF_REMOVED #/M/a", "ONEOF_FIELD_ADDED #/M/b/1"}, compatible: true},
	{rule: "two oneofs merged keep every member",
		original: proto(`message M { oneof a { string x = 1; string y = 2; } oneof b { int64 p = 3; int64 q = 4; } }`),
		update:   proto(`message M { oneof a { string x = 1; string y = 2; int64 p = 3; int64 q = 4; } }`),
		want:     []string{"ONEOF_REMOVED #/M/b", "ONEOF_FIELD_ADDED #/M/a/3", "ONEOF_FIELD_ADDED #/M/a/4"}, compatible: true},
	{rule: "a oneof split in two removes no member",
		original: proto(`message M { oneof a { string x = 1; string y = 2; int64 p = 3; } }`),
		update:   proto(`message M { oneof a { string x = 1; string y = 2; } oneof b { int64 p = 3; } }`),
		want:     []string{"ONEOF_ADDED #/M/b"}, compatible: true},
	{rule: "one field moved into a new single-field oneof is ONEOF_ADDED",
		original: proto(`message M { string a = 1; int64 n = 2; }`),
		update:   proto(`message M { string a = 1; oneof o { int64 n = 2; } }`),
		want:     []string{"ONEOF_ADDED #/M/o"}, compatible: true},
	{rule: "a member moved to the top level is FIELD_ADDED, not ONEOF_FIELD_REMOVED",
		original: proto(`message M { oneof o { string a = 1; int64 n = 2; } }`),
		update:   proto(`message M { oneof o { string a = 1; } int64 n = 2; }`),
		want:     []string{"FIELD_ADDED #/M/2"}, compatible: true},
	{rule: "a member whose number is gone from the message is ONEOF_FIELD_REMOVED",
		original: proto(`message M { oneof o { string a = 1; int64 n = 2; } }`),
		update:   proto(`message M { oneof o { string a = 1; } }`),
		want:     []string{"ONEOF_FIELD_REMOVED #/M/o/2"}},
	{rule: "a moved member is still compared by number: its type change shows",
		original: proto(`message M { oneof a { string x = 1; } oneof b { string y = 2; } }`),
		update:   proto(`message M { oneof b { string y = 2; int64 x = 1; } }`),
		want:     []string{"ONEOF_REMOVED #/M/a", "ONEOF_FIELD_ADDED #/M/b/1", "FIELD_SCALAR_KIND_CHANGED #/M/1"}},
	{rule: "two top-level fields moved into one oneof is MULTIPLE_FIELDS_MOVED_TO_ONEOF",
		original: proto(`message M { string a = 1; int64 n = 2; }`),
		update:   proto(`message M { oneof o { string a = 1; int64 n = 2; } }`),
		want:     []string{"MULTIPLE_FIELDS_MOVED_TO_ONEOF #/M/o", "ONEOF_ADDED #/M/o"}},
}

func TestProtobufOneofsAreJudgedByMemberNumbers(t *testing.T) {
	checkDiffRules(t, protoOneofRules, protoDiffStrings)
}

// The registry resolves Confluent's metadata and decimal imports and Google's well-known types
// without a reference; a reference given without its text for one of them uses that copy.
func TestProtobufBuiltinImportsNeedNoReference(t *testing.T) {
	src := "syntax = \"proto3\";\npackage acme;\nimport \"confluent/meta.proto\";\nimport \"confluent/type/decimal.proto\";\nimport \"google/protobuf/timestamp.proto\";\n" +
		"message Payment {\n  option (confluent.message_meta).doc = \"a payment\";\n  confluent.type.Decimal amount = 1 [(confluent.field_meta) = { params: [{ key: \"scale\", value: \"2\" }] }];\n  google.protobuf.Timestamp at = 2;\n}\n"
	if _, err := schema.Parse(schema.Protobuf, src); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.Parse(schema.Protobuf, src, schema.Reference{Name: "confluent/meta.proto", Subject: "confluent/meta.proto", Version: 1}); err != nil {
		t.Fatalf("textless reference to a built-in: %v", err)
	}
	// A built-in imported under a build-tree path the registry never resolves still compiles.
	if _, err := schema.Parse(schema.Protobuf, strings.Replace(src, `import "confluent/meta.proto"`, `import "third_party/proto/confluent/meta.proto"`, 1)); err != nil {
		t.Fatalf("built-in under a longer path: %v", err)
	}
	_, err := schema.Parse(schema.Protobuf, "syntax = \"proto3\";\nimport \"other.proto\";\nmessage M { string a = 1; }", schema.Reference{Name: "other.proto", Subject: "other", Version: 1})
	if err == nil || !strings.Contains(err.Error(), "no schema text") {
		t.Fatalf("textless reference to an unknown import: %v", err)
	}
}

// A schema already registered is judged against the versions before it, as at its registration:
// never against itself. The result names the rule set that judged.
func TestAlreadyRegisteredIsJudgedAgainstTheVersionsBeforeIt(t *testing.T) {
	v1 := mustParse(t, schema.JSON, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"}}}`)
	v2 := mustParse(t, schema.JSON, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`)
	prev := []compat.Version{{Version: 1, Schema: v1}, {Version: 2, Schema: v2}}
	res := compat.Evaluate(compat.Request{Level: compat.Backward, Policy: compat.Strict, Proposed: v2, Previous: prev, AlreadyRegistered: 2})
	if res.Compatible || res.AlreadyRegistered != 2 || !slices.Equal(res.Compared, []int{1}) ||
		res.Incompatibilities[0].Type != "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" {
		t.Fatalf("%+v", res)
	}
	if rs := res.RuleSet; rs.Format != schema.JSON || rs.Draft != "2020-12" || rs.Level != compat.Backward || rs.Policy != compat.Strict {
		t.Fatalf("rule set %+v", rs)
	}
	// Judged as new (the mistake the registry never makes), it would pass against itself.
	if res := compat.Check(compat.Backward, compat.Strict, v2, prev); !res.Compatible {
		t.Fatalf("against itself: %+v", res)
	}
}
