package auth

import (
	"fmt"
	"sync/atomic"
	"testing"

	"latchkey/store"
)

// BenchmarkAuthenticateSession is the session check without HTTP, from
// parallel goroutines (-cpu sets how many processors): every goroutine
// checks one session's token (tokens=1: one busy user), or each of 32
// sessions is checked by some (tokens=32). Nothing the check keeps is
// shared by all sessions, so ns/op should fall with more processors in
// both, one token included.
func BenchmarkAuthenticateSession(b *testing.B) {
	s, l := signedIn(b, Config{})
	p, err := s.Project(ctx, l.project.ID)
	if err != nil {
		b.Fatal(err)
	}
	headers := []string{"Bearer " + l.Token}
	for i := 1; i < 32; i++ {
		sess := s.newSession(p, l.User, "otp")
		sess.ID = fmt.Sprint(sess.ID[:len(sess.ID)-2], i+10)
		if err := s.db.Update(ctx, func(tx store.Tx) error { return tx.PutSession(sess) }); err != nil {
			b.Fatal(err)
		}
		tok, _, err := s.signSession(p, sess)
		if err != nil {
			b.Fatal(err)
		}
		headers = append(headers, "Bearer "+tok)
	}
	for _, n := range []int{1, 32} {
		b.Run(fmt.Sprint("tokens=", n), func(b *testing.B) {
			for _, h := range headers[:n] {
				if _, err := s.AuthenticateSession(ctx, h); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1))
				for pb.Next() {
					if _, err := s.AuthenticateSession(ctx, headers[i%n]); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}
