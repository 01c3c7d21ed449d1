// Package objstore reads and writes objects of S3 and S3-compatible
// servers: URLs (s3://BUCKET/KEY), HEAD, ranged GETs into a file,
// listings of a prefix page by page, and uploads from a file that leave
// nothing behind when they fail. The configuration and the credentials
// are the AWS SDK's whole chain (config.LoadDefaultConfig), so a run
// authenticates the way the AWS CLI and every SDK program on the same
// machine, instance, pod or job does. It knows nothing of tensors;
// package fileio makes an object one more source and sink.
package objstore

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
)

// Options are the choices a run makes beyond the AWS configuration.
type Options struct {
	// Anonymous sends requests unsigned (--no-sign-request): a public
	// bucket read without credentials. Never chosen for the user: no
	// credentials found is an error.
	Anonymous bool
	// HTTPClient replaces the transport (tests); nil is ours, tuned for
	// many transfers at once.
	HTTPClient aws.HTTPClient
}

// httpClient is the transport: connections kept and reused for the
// transfers in flight and the batch's workers, an unreachable endpoint
// said so in seconds, a stalled server (no response headers) in 30 s, and
// ranged GETs as stored, not gzip-decoded. It is the SDK's buildable
// client, so AWS_CA_BUNDLE and ca_bundle still apply to it.
func httpClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) {
			d.Timeout = 10 * time.Second
			d.KeepAlive = 30 * time.Second
		}).
		WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = 512
			tr.MaxIdleConnsPerHost = 256
			tr.MaxConnsPerHost = 0
			tr.IdleConnTimeout = time.Minute
			tr.ResponseHeaderTimeout = 30 * time.Second
			tr.TLSHandshakeTimeout = 10 * time.Second
			tr.DisableCompression = true
			// HTTP/1.1 connections, one per transfer: a single HTTP/2
			// connection would carry every transfer in flight through
			// one TCP window.
			tr.ForceAttemptHTTP2 = false
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		})
}

// load reads the AWS configuration: the environment, the shared files
// (profiles, [services] endpoints, role_arn, SSO, credential_process),
// web identity, the container endpoint and IMDS, in the SDK's order.
// The credentials are looked for now, not at the first request, so that
// a run without any fails before its work, in one line.
func load(ctx context.Context, o Options) (aws.Config, error) {
	hc := o.HTTPClient
	if hc == nil {
		hc = httpClient()
	}
	// The SDK's log lines (an IMDS fallback, a skipped checksum) are not
	// the run's: its errors say what failed, in one line.
	opts := []func(*config.LoadOptions) error{config.WithHTTPClient(hc), config.WithLogger(logging.Nop{})}
	if o.Anonymous {
		opts = append(opts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cfg, fmt.Errorf("the AWS configuration: %s", oneLine(err.Error()))
	}
	if cfg.Region == "" {
		// An S3-compatible server takes any region; AWS names a bucket's
		// own in its answer, which is then asked again (Store.call).
		cfg.Region = "us-east-1"
	}
	if o.Anonymous {
		return cfg, nil
	}
	if cfg.Credentials == nil {
		return cfg, errNoCredentials("none configured")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return cfg, errNoCredentials(oneLine(err.Error()))
	}
	return cfg, nil
}

func errNoCredentials(why string) error {
	return fmt.Errorf("no AWS credentials (looked in the environment, the shared files, web identity, the container endpoint and IMDS: %s); --no-sign-request reads a public bucket without them", why)
}

// clientOptions are what an S3-compatible server (a configured endpoint:
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, a profile's endpoint_url or
// its [services] s3 block) needs that AWS does not: path-style addressing
// (no DNS name per bucket), and checksums only when an operation
// requires one (since service/s3 v1.73 the SDK sends CRC32 trailers in
// aws-chunked bodies by default, which MinIO, Ceph and R2 refuse; the
// uploads here send their own CRC32C in a header instead). Everywhere,
// bodies are sent at once (no "Expect: 100-continue" and its wait for an
// answer some servers never give).
func clientOptions(o *s3.Options) {
	o.ContinueHeaderThresholdBytes = -1
	o.DisableLogOutputChecksumValidationSkipped = true
	if o.BaseEndpoint != nil && *o.BaseEndpoint != "" {
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
}
