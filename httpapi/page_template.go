package httpapi

import (
	"html/template"
	"io"
	"sync"
)

// pageTemplate is a hosted page's template set, parsed at its first use
// rather than when the process starts: parsing the sign-in pages' and the
// account page's templates was most of this package's initialisation
// (0.6 ms and 170 KB allocated before the server listened, for pages
// that an idle server or one doing only API work never shows). The
// page's blocks, declared beside the code that renders them, are added
// while the package initialises (add) and parsed with the page.
type pageTemplate struct {
	src    string
	blocks []pageBlock
	parsed func() *template.Template
}

// pageBlock is one named template of a page's set and its source.
type pageBlock struct{ name, src string }

// newPageTemplate is the page template name with pageFuncs and funcs;
// from gives its source.
func newPageTemplate(name string, funcs template.FuncMap) *pageTemplate {
	p := &pageTemplate{}
	p.parsed = sync.OnceValue(func() *template.Template {
		t := template.Must(template.New(name).Funcs(pageFuncs).Funcs(funcs).Parse(p.src))
		for _, b := range p.blocks {
			template.Must(t.New(b.name).Parse(b.src))
		}
		return t
	})
	return p
}

// from sets the page's own source (the template named for the page).
func (p *pageTemplate) from(src string) *pageTemplate {
	p.src = src
	return p
}

// add declares one more template of the page's set (its {{define}}s
// become the page's). Only package initialisation calls it; it returns
// a value so that a package-level declaration can call it.
func (p *pageTemplate) add(name, src string) struct{} {
	p.blocks = append(p.blocks, pageBlock{name, src})
	return struct{}{}
}

// Execute renders the page with data, parsing the set the first time.
func (p *pageTemplate) Execute(w io.Writer, data any) error {
	return p.parsed().Execute(w, data)
}

// Templates are the parsed templates of the set.
func (p *pageTemplate) Templates() []*template.Template { return p.parsed().Templates() }
