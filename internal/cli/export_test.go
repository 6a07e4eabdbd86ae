package cli

// FailureCategories exposes the CLI's list of failure categories to the
// tests, which compare it with the server's.
var FailureCategories = failureCategories

// MaxImportBytes exposes the CLI's copy of the import limit.
const MaxImportBytes = maxImportBytes
