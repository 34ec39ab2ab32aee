package testutil

import "hash/fnv"

// NginxMixPath is the path of the Ingresses of NginxMixAnnotations that
// set rewrite-target (with use-regex): a regular expression with the
// captures $1 and $2, of pathType ImplementationSpecific.
const NginxMixPath = "/app(/|$)(.*)"

// NginxMixAnnotations are the annotations (without the
// nginx.ingress.kubernetes.io/ prefix) of the k-th twentieth (0 to 19) of
// make bench-scale's ingress-nginx workload: a mix of those clusters
// leaving ingress-nginx use most, in twentieths: proxy-body-size 8 (8m),
// proxy-read/send-timeout 6 (120 s), ssl-redirect false 5, enable-cors 2,
// rewrite-target with use-regex 2 (their path: NginxMixPath),
// whitelist-source-range 1, limit-rps 1, affinity cookie 1,
// backend-protocol HTTPS 1, permanent-redirect 1, upstream-vhost 1,
// custom-http-errors 1; one twentieth carries none (an empty map).
func NginxMixAnnotations(k int) map[string]string {
	ann := map[string]string{}
	set := func(cond bool, kv ...string) {
		for i := 0; cond && i+1 < len(kv); i += 2 {
			ann[kv[i]] = kv[i+1]
		}
	}
	set(k < 8, "proxy-body-size", "8m")
	set(k%3 == 0, "proxy-read-timeout", "120", "proxy-send-timeout", "120")
	set(k%4 == 1, "ssl-redirect", "false")
	set(k == 2 || k == 13, "enable-cors", "true")
	set(k == 5 || k == 15, "rewrite-target", "/$2", "use-regex", "true")
	set(k == 7, "whitelist-source-range", "10.0.0.0/8, 192.168.0.0/16")
	set(k == 8, "limit-rps", "50")
	set(k == 10, "affinity", "cookie")
	set(k == 11, "backend-protocol", "HTTPS")
	set(k == 12, "permanent-redirect", "https://www.example.com/moved")
	set(k == 14, "upstream-vhost", "internal.example.com")
	set(k == 16, "custom-http-errors", "404,503")
	return ann
}

// NginxMixClass is the twentieth (0 to 19) of NginxMixAnnotations that
// make bench-scale's ingress-nginx workload gives the Ingress named name
// in namespace ns: FNV-1a of "ns/name", mod 20. So an Ingress's class and
// the class of the Ingress whose Service it routes to are independent
// (about 1 in 5.4 pairs differ in their backend settings: 10, 11 or none).
func NginxMixClass(ns, name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns + "/" + name))
	return int(h.Sum32() % 20)
}
