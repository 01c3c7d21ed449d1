// Package objstore reads and writes objects of S3 and S3-compatible
// servers: URLs (s3://BUCKET/KEY), the AWS configuration (environment
// and ~/.aws files, as the AWS CLI reads them), HEAD, ranged GETs into a
// file, listings of a prefix, and uploads from a file that leave nothing
// behind when they fail. It knows nothing of tensors; package fileio
// makes an object one more source and sink.
package objstore

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Config is the AWS configuration a client is built from.
type Config struct {
	// Endpoint is the server's URL (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
	// or the profile's endpoint_url); "" for AWS itself.
	Endpoint string
	Region   string
	// Profile is the profile of the shared files that was read ("" when
	// neither AWS_PROFILE nor a "default" profile was there).
	Profile  string
	CABundle string // a PEM file of extra roots (AWS_CA_BUNDLE, ca_bundle)
	// ProfileSet: AWS_PROFILE named the profile, so a profile without
	// usable credentials is an error, not anonymous access.
	ProfileSet bool
}

// Host is the endpoint's host[:port] and whether it is https: AWS
// itself when no endpoint is configured.
func (c *Config) Host() (host string, secure, pathStyle bool, err error) {
	if c.Endpoint == "" {
		return "s3.amazonaws.com", true, false, nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false, false, fmt.Errorf("endpoint %q: want http://HOST[:PORT] or https://HOST[:PORT]", c.Endpoint)
	}
	if u.Path != "" && u.Path != "/" {
		return "", false, false, fmt.Errorf("endpoint %q: a path after the host is not supported", c.Endpoint)
	}
	// An S3-compatible server is addressed path-style (http://HOST/BUCKET/KEY):
	// it needs no DNS name per bucket.
	return u.Host, u.Scheme == "https", true, nil
}

// LoadConfig resolves the configuration as the AWS CLI does: the
// environment first, then the profile (AWS_PROFILE, else "default") of
// the config file (AWS_CONFIG_FILE, else ~/.aws/config). getenv is
// os.Getenv in the program, a map in tests. Credentials are the client's
// (credentials.go).
func LoadConfig(getenv func(string) string) (*Config, error) {
	c := &Config{Profile: getenv("AWS_PROFILE")}
	c.ProfileSet = c.Profile != ""
	if c.Profile == "" {
		c.Profile = "default"
	}
	prof, err := readProfile(configFile(getenv), c.Profile, true)
	if err != nil {
		return nil, err
	}
	first := func(vals ...string) string {
		for _, v := range vals {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
		return ""
	}
	c.Region = first(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"), prof["region"])
	c.Endpoint = first(getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"), prof["endpoint_url"])
	c.CABundle = first(getenv("AWS_CA_BUNDLE"), prof["ca_bundle"])
	return c, nil
}

func home(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

func configFile(getenv func(string) string) string {
	if f := getenv("AWS_CONFIG_FILE"); f != "" {
		return f
	}
	return filepath.Join(home(getenv), ".aws", "config")
}

func credentialsFile(getenv func(string) string) string {
	if f := getenv("AWS_SHARED_CREDENTIALS_FILE"); f != "" {
		return f
	}
	return filepath.Join(home(getenv), ".aws", "credentials")
}

// readProfile reads the keys of one profile of an AWS ini file: the
// config file names it "[profile NAME]" (but "[default]"), the
// credentials file "[NAME]". A missing file is an empty profile.
func readProfile(file, profile string, config bool) (map[string]string, error) {
	switch {
	case !config:
		return readSection(file, profile)
	case profile == "default":
		return readSection(file, "default", "profile default")
	}
	return readSection(file, "profile "+profile)
}

// readSection reads the keys of the sections of an AWS ini file with
// one of the given names ("[sso-session NAME]"). A missing file is an
// empty section.
func readSection(file string, names ...string) (map[string]string, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("AWS configuration %s: %w", file, err)
	}
	defer f.Close()
	keys := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' && strings.HasSuffix(line, "]") {
			name := strings.Join(strings.Fields(line[1:len(line)-1]), " ")
			in = slices.Contains(names, name)
			continue
		}
		if !in {
			continue
		}
		// A nested "s3 =" block's keys count as the profile's (its
		// endpoint_url is the S3 one); the first of a key wins.
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if _, dup := keys[k]; !dup {
			keys[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("AWS configuration %s: %w", file, err)
	}
	return keys, nil
}
