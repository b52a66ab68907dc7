package confluent

import "testing"

// FuzzCredentialStatement feeds arbitrary SQL: never a panic, and a CREATE MODEL behind any
// leading comments is always recognised.
func FuzzCredentialStatement(f *testing.F) {
	f.Add("CREATE MODEL m WITH ('openai.api_key' = 'x')", "")
	f.Add("/* unterminated", "")
	f.Add("-- only a comment", "CREATE_MODEL")
	f.Add("create or replace temporary connection c", "")
	f.Add("ALTER\tCONNECTION\nc SET ('api-key'='x')", "")
	f.Fuzz(func(t *testing.T, sql, kind string) {
		_ = credentialStatement(sql, kind)
		if got := credentialStatement("/*"+sql+"*/ CREATE MODEL m", ""); got != "CREATE MODEL" && !containsCommentEnd(sql) {
			t.Fatalf("CREATE MODEL after a comment not recognised: %q", got)
		}
	})
}

func containsCommentEnd(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '*' && s[i+1] == '/' {
			return true
		}
	}
	return false
}
