package postgres

import "latchkey/store"

// Test hooks into the factors domain's unexported helpers and
// statements (package postgres_test reaches them through these).

// DeleteUserFactors calls tx's deleteUserFactors.
func DeleteUserFactors(tx store.Tx, userID string) error {
	return tx.(*txn).deleteUserFactors(userID)
}

// DeleteProjectAuthRows calls tx's deleteProjectAuthRows.
func DeleteProjectAuthRows(tx store.Tx, projectID string, methodIDs []string) error {
	return tx.(*txn).deleteProjectAuthRows(projectID, methodIDs)
}

// ProjectMethodIDs calls tx's projectMethodIDs.
func ProjectMethodIDs(tx store.Tx, projectID string) ([]string, error) {
	return tx.(*txn).projectMethodIDs(projectID)
}

// FactorStatements are the factors domain's statements by name, for
// EXPLAIN.
var FactorStatements = map[string]string{
	"Code":                  sqlCode,
	"PutCode":               sqlPutCode,
	"DeleteCode":            sqlDeleteCode,
	"Throttle":              sqlThrottle,
	"PutThrottle":           sqlPutThrottle,
	"DeleteThrottle":        sqlDeleteThrottle,
	"MagicLink":             sqlMagicLink,
	"PutMagicLink":          sqlPutMagicLink,
	"DeleteMagicLinks":      sqlDeleteMagicLinks,
	"Factor":                sqlFactor,
	"PutFactor":             sqlPutFactor,
	"DeleteFactor":          sqlDeleteFactor,
	"BackupCodes":           sqlBackupCodes,
	"PutBackupCodes":        sqlPutBackupCodes,
	"DeleteBackupCodes":     sqlDeleteBackupCodes,
	"Grant":                 sqlGrant,
	"PutGrant":              sqlPutGrant,
	"DeleteGrants":          sqlDeleteGrants,
	"DeleteUserFactors":     sqlDeleteUserFactors,
	"Passkey":               sqlPasskey,
	"PutPasskey":            sqlPutPasskey,
	"DeletePasskey":         sqlDeletePasskey,
	"UserPasskeys":          sqlUserPasskeys,
	"Challenge":             sqlChallenge,
	"PutChallenge":          sqlPutChallenge,
	"DeleteChallenge":       sqlDeleteChallenge,
	"OAuthFlow":             sqlOAuthFlow,
	"PutOAuthFlow":          sqlPutOAuthFlow,
	"DeleteOAuthFlow":       sqlDeleteOAuthFlow,
	"ExternalMethod":        sqlExternalMethod,
	"ExternalMethodByName":  sqlExternalMethodByName,
	"ExternalMethods":       sqlExternalMethods,
	"PutExternalMethod":     sqlPutExternalMethod,
	"ProjectMethodIDs":      sqlProjectMethodIDs,
	"DeleteProjectAuthRows": sqlDeleteProjectAuthRows,
}
