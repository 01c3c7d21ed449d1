package objstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Creds are the keys requests are signed with; no AccessKeyID means
// anonymous (unsigned) requests.
type Creds struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// Anonymous: requests go unsigned (public buckets).
func (c Creds) Anonymous() bool { return c.AccessKeyID == "" }

// Credentials resolves the credentials as the AWS CLI does:
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else
// the profile of the shared credentials and config files (static keys,
// SSO from the token `aws sso login` cached, credential_process), else
// none: anonymous requests, for public buckets. A profile that
// AWS_PROFILE names and that yields no credentials is an error.
// Credentials are resolved once per run: a run outlives no session.
func Credentials(cfg *Config, getenv func(string) string) (Creds, error) {
	if getenv("AWS_ACCESS_KEY_ID") != "" && getenv("AWS_SECRET_ACCESS_KEY") != "" {
		return Creds{getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")}, nil
	}
	c, err := profileCredentials(cfg.Profile, getenv)
	switch {
	case err == nil && c.AccessKeyID != "":
		return c, nil
	case cfg.ProfileSet:
		if err == nil {
			err = errors.New("no credentials in it")
		}
		return Creds{}, fmt.Errorf("AWS_PROFILE %s: %v", cfg.Profile, oneLine(err.Error()))
	}
	return Creds{}, nil
}

// profileCredentials reads the profile's keys from both files, the
// credentials file's over the config file's, in the order of the AWS
// SDKs: static keys, then SSO, then credential_process.
func profileCredentials(profile string, getenv func(string) string) (Creds, error) {
	keys, err := readProfile(configFile(getenv), profile, true)
	if err != nil {
		return Creds{}, err
	}
	cred, err := readProfile(credentialsFile(getenv), profile, false)
	if err != nil {
		return Creds{}, err
	}
	for k, v := range cred {
		keys[k] = v
	}
	id, secret := keys["aws_access_key_id"], keys["aws_secret_access_key"]
	switch {
	case id != "" && secret != "":
		return Creds{id, secret, keys["aws_session_token"]}, nil
	case id != "" || secret != "":
		return Creds{}, errors.New("partial static credentials: aws_access_key_id and aws_secret_access_key must both be set")
	case keys["sso_role_name"] != "":
		return ssoCredentials(keys, getenv)
	case keys["sso_session"] != "" || keys["sso_start_url"] != "" || keys["sso_account_id"] != "":
		return Creds{}, errors.New("SSO configuration without sso_role_name")
	case keys["credential_process"] != "":
		return processCredentials(keys["credential_process"])
	}
	return Creds{}, nil
}

// processCredentials runs a credential_process command and reads the
// keys it prints (JSON, Version 1).
func processCredentials(command string) (Creds, error) {
	args, err := shellSplit(command)
	if err != nil || len(args) == 0 {
		return Creds{}, fmt.Errorf("credential_process %q: cannot split it into words (%v)", command, err)
	}
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		return Creds{}, fmt.Errorf("credential_process %s: %v", args[0], err)
	}
	var v struct {
		AccessKeyID     string `json:"AccessKeyId"`
		SecretAccessKey string
		SessionToken    string
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return Creds{}, fmt.Errorf("credential_process %s: %v", args[0], err)
	}
	return Creds{v.AccessKeyID, v.SecretAccessKey, v.SessionToken}, nil
}

// ssoCredentials gets role credentials from the SSO portal with the
// token `aws sso login` cached under ~/.aws/sso/cache.
func ssoCredentials(keys map[string]string, getenv func(string) string) (Creds, error) {
	account, role := keys["sso_account_id"], keys["sso_role_name"]
	if account == "" {
		return Creds{}, errors.New("sso_role_name without sso_account_id")
	}
	region, cacheKey := keys["sso_region"], keys["sso_start_url"]
	if name := keys["sso_session"]; name != "" {
		sess, err := readSection(configFile(getenv), "sso-session "+name)
		if err != nil {
			return Creds{}, err
		}
		cacheKey = name
		if region == "" {
			region = sess["sso_region"]
		}
	}
	if cacheKey == "" {
		return Creds{}, errors.New("sso_role_name without sso_session or sso_start_url")
	}
	sum := sha1.Sum([]byte(cacheKey))
	file := filepath.Join(home(getenv), ".aws", "sso", "cache", hex.EncodeToString(sum[:])+".json")
	raw, err := os.ReadFile(file)
	if err != nil {
		return Creds{}, fmt.Errorf("cached SSO token (try `aws sso login`): %v", err)
	}
	var tok struct {
		AccessToken string    `json:"accessToken"`
		ExpiresAt   time.Time `json:"expiresAt"`
		Region      string    `json:"region"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil {
		return Creds{}, fmt.Errorf("cached SSO token %s: %v", file, err)
	}
	if tok.ExpiresAt.Before(time.Now()) {
		return Creds{}, errors.New("the cached SSO token has expired: run `aws sso login`")
	}
	if region == "" {
		region = tok.Region
	}
	suffix := "amazonaws.com"
	if strings.HasPrefix(region, "cn-") {
		suffix = "amazonaws.com.cn"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := "https://portal.sso." + region + "." + suffix + "/federation/credentials?" +
		encodeQuery(map[string]string{"account_id": account, "role_name": role})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Creds{}, err
	}
	req.Header.Set("x-amz-sso_bearer_token", tok.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Creds{}, fmt.Errorf("SSO role credentials: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return Creds{}, fmt.Errorf("SSO role credentials: %s: %s", resp.Status, oneLine(string(body)))
	}
	var rc struct {
		RoleCredentials struct {
			AccessKeyID     string `json:"accessKeyId"`
			SecretAccessKey string `json:"secretAccessKey"`
			SessionToken    string `json:"sessionToken"`
		} `json:"roleCredentials"`
	}
	if err := json.Unmarshal(body, &rc); err != nil || rc.RoleCredentials.AccessKeyID == "" {
		return Creds{}, errors.New("SSO role credentials: no keys in the portal's answer")
	}
	r := rc.RoleCredentials
	return Creds{r.AccessKeyID, r.SecretAccessKey, r.SessionToken}, nil
}

// shellSplit splits a command line into words as the AWS CLI does on
// Unix (Python's shlex.split): blanks separate words, single quotes keep
// everything, double quotes keep all but a backslash before ", \, $ or
// `, and a backslash outside quotes keeps the next character. A path
// with spaces can then be quoted ("/opt/my tools/creds" --profile x).
func shellSplit(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in := false // inside a word
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("an unclosed single quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("an unclosed double quote")
			}
			in = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				w.WriteByte(s[i])
			}
			in = true
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}
