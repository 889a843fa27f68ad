package kinds

import (
	"strings"
	"testing"
)

// TestNewInvoices_EmailToBadText: the invoices builtin's one job-supplied text in its e-mails,
// the email_to template, is refused by the config check when it holds a NUL byte or invalid
// UTF-8, so the builtin never hands the outbox a message a store cannot keep.
func TestNewInvoices_EmailToBadText(t *testing.T) {
	for _, tmpl := range []string{
		"client-{client}\x00@example.test",
		"client-{client}@exa\x00mple.test",
		"client-\xff{client}@example.test",
		"\"a\x00{client}\"@example.test",
		"\"a\xff{client}\"@example.test",
	} {
		_, err := NewInvoices(InvoicesParams{Clients: 1, Period: "month", EmailTo: tmpl})
		if err == nil || !strings.Contains(err.Error(), "email_to") {
			t.Errorf("NewInvoices with email_to %q: err %v, want a refusal naming email_to", tmpl, err)
		}
	}
}
