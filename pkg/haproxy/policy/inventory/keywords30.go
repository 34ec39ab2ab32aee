package inventory

import "strings"

// Keyword lists of HAProxy 3.0, per section: every first word a section's
// parser accepts. They come from the keywords HAProxy registers (the 3.0.11
// binary's `haproxy -dKcfg -q -c -f /dev/null`) and the ones its section
// parsers match with strcmp (src/cfgparse-global.c cfg_parse_global,
// src/cfgparse-listen.c cfg_parse_listen, src/cfgparse.c cfg_parse_peers,
// cfg_parse_mailers, cfg_parse_users, cfg_parse_netns, src/resolvers.c,
// src/http_htx.c, src/sink.c, src/cache.c, src/fcgi-app.c, src/log.c,
// src/ssl_ckch.c, src/mworker-prog.c, src/flt_spoe.c), each checked with
// the 3.0.11 binary not to be reported as unknown, plus the optional
// modules' global keywords (addons/51degrees, addons/wurfl,
// addons/deviceatlas) and ssl-engine (built without it). A keyword missing
// from its section's list is denied by the policy: it may take a file.
var sectionKeywordLists = map[string]string{
	"global": "" +
		"anonkey busy-polling ca-base chroot close-spread-time cluster-secret cpu-map " +
		"crt-base daemon default-path description expose-deprecated-directives " +
		"expose-experimental-directives external-check fd-hard-limit gid grace " +
		"group h1-accept-payload-with-any-method h1-case-adjust h1-case-adjust-file " +
		"h1-do-not-close-on-insecure-transfer-encoding h2-workaround-bogus-websocket-clients " +
		"hard-stop-after harden.reject-privileged-ports.quic harden.reject-privileged-ports.tcp " +
		"http-err-codes http-fail-codes httpclient.resolvers.disabled httpclient.resolvers.id " +
		"httpclient.resolvers.prefer httpclient.retries httpclient.ssl.ca-file " +
		"httpclient.ssl.verify httpclient.timeout.connect insecure-fork-wanted " +
		"insecure-setuid-wanted issuers-chain-path key-base limited-quic localpeer " +
		"log log-send-hostname log-tag lua-load lua-load-per-thread lua-prepend-path " +
		"master-worker max-spread-checks maxcompcpuusage maxcomprate maxconn maxconnrate " +
		"maxpipes maxsessrate maxsslconn maxsslrate maxzlibmem mworker-max-reloads " +
		"nbproc nbthread no-memory-trimming no-quic node noepoll noevports nogetaddrinfo " +
		"nokqueue nopoll noreuseport nosplice numa-cpu-mapping ocsp-update.disable " +
		"ocsp-update.httpproxy ocsp-update.maxdelay ocsp-update.mindelay ocsp-update.mode " +
		"pidfile pp2-never-send-local prealloc-fd presetenv profiling.tasks quick-exit " +
		"quiet resetenv server-state-base server-state-file set-dumpable set-var set-var-fmt " +
		"setcap setenv spread-checks ssl-default-bind-ciphers ssl-default-bind-ciphersuites " +
		"ssl-default-bind-client-sigalgs ssl-default-bind-curves ssl-default-bind-options " +
		"ssl-default-bind-sigalgs ssl-default-server-ciphers ssl-default-server-ciphersuites " +
		"ssl-default-server-client-sigalgs ssl-default-server-curves ssl-default-server-options " +
		"ssl-default-server-sigalgs ssl-dh-param-file ssl-load-extra-del-ext ssl-load-extra-files " +
		"ssl-mode-async ssl-propquery ssl-provider ssl-provider-path ssl-security-level " +
		"ssl-server-verify ssl-skip-self-issued-ca stats stats-file strict-limits " +
		"thread-group thread-groups thread-hard-limit trace tune.applet.zero-copy-forwarding " +
		"tune.buffers.limit tune.buffers.reserve tune.bufsize tune.chksize tune.comp.maxlevel " +
		"tune.disable-fast-forward tune.disable-zero-copy-forwarding tune.epoll.mask-events " +
		"tune.events.max-events-at-once tune.fail-alloc tune.fd.edge-triggered " +
		"tune.h1.zero-copy-fwd-recv tune.h1.zero-copy-fwd-send tune.h2.be.glitches-threshold " +
		"tune.h2.be.initial-window-size tune.h2.be.max-concurrent-streams " +
		"tune.h2.fe.glitches-threshold tune.h2.fe.initial-window-size " +
		"tune.h2.fe.max-concurrent-streams tune.h2.fe.max-total-streams tune.h2.header-table-size " +
		"tune.h2.initial-window-size tune.h2.max-concurrent-streams tune.h2.max-frame-size " +
		"tune.h2.zero-copy-fwd-send tune.http.cookielen tune.http.logurilen " +
		"tune.http.maxhdr tune.idle-pool.shared tune.idletimer tune.listener.default-shards " +
		"tune.listener.multi-queue tune.lua.burst-timeout tune.lua.forced-yield " +
		"tune.lua.log.loggers tune.lua.log.stderr tune.lua.maxmem tune.lua.service-timeout " +
		"tune.lua.session-timeout tune.lua.task-timeout tune.max-checks-per-thread tune.maxaccept " +
		"tune.maxpollevents tune.maxrewrite tune.memory.hot-size tune.pattern.cache-size " +
		"tune.peers.max-updates-at-once tune.pipesize tune.pool-high-fd-ratio " +
		"tune.pool-low-fd-ratio tune.pt.zero-copy-forwarding tune.quic.backend.max-idle-timeou " +
		"tune.quic.cc-hystart tune.quic.frontend.conn-tx-buffers.limit " +
		"tune.quic.frontend.glitches-threshold tune.quic.frontend.max-idle-timeout " +
		"tune.quic.frontend.max-streams-bidi tune.quic.max-frame-loss tune.quic.reorder-ratio " +
		"tune.quic.retry-threshold tune.quic.socket-owner tune.quic.zero-copy-fwd-send " +
		"tune.rcvbuf.backend tune.rcvbuf.client tune.rcvbuf.frontend tune.rcvbuf.server " +
		"tune.recv_enough tune.ring.queues tune.runqueue-depth tune.sched.low-latency " +
		"tune.sndbuf.backend tune.sndbuf.client tune.sndbuf.frontend tune.sndbuf.server " +
		"tune.ssl.cachesize tune.ssl.capture-buffer-size tune.ssl.capture-cipherlist-size " +
		"tune.ssl.default-dh-param tune.ssl.force-private-cache tune.ssl.hard-maxrecord " +
		"tune.ssl.keylog tune.ssl.lifetime tune.ssl.maxrecord tune.ssl.ocsp-update.maxdelay " +
		"tune.ssl.ocsp-update.mindelay tune.ssl.ssl-ctx-cache-size tune.stick-counters " +
		"tune.vars.check-max-size tune.vars.global-max-size tune.vars.proc-max-size " +
		"tune.vars.reqres-max-size tune.vars.sess-max-size tune.vars.txn-max-size uid ulimit-n " +
		"unix-bind unsetenv user warn-blocked-traffic-after zero-warning " +
		"ssl-engine 51degrees-data-file 51degrees-property-name-list 51degrees-property-separator " +
		"51degrees-cache-size 51degrees-use-performance-graph 51degrees-use-predictive-graph " +
		"51degrees-drift 51degrees-difference 51degrees-allow-unmatched wurfl-data-file " +
		"wurfl-information-list-separator wurfl-information-list wurfl-patch-file wurfl-cache-size " +
		"wurfl-engine-mode wurfl-useragent-priority deviceatlas-json-file deviceatlas-log-level " +
		"deviceatlas-property-separator deviceatlas-properties-cookie deviceatlas-cache-size",
	"proxy": "" +
		"acl appsession backlog balance bind bind-process block capture cliexp clitcpka-cnt " +
		"clitcpka-idle clitcpka-intvl clitimeout compression contimeout cookie declare " +
		"default-server default_backend description disabled dispatch dynamic-cookie-key " +
		"email-alert enabled error-log-format errorfile errorfiles errorloc errorloc302 " +
		"errorloc303 external-check filter force-persist fullconn grace guid hash-balance-factor " +
		"hash-type http-after-response http-check http-error http-request http-response http-reuse " +
		"http-send-name-header id ignore-persist load-server-state-from-file log log-format " +
		"log-format-sd log-tag max-keep-alive-queue max-session-srv-conns maxconn mode monitor " +
		"monitor-net monitor-uri option persist rate-limit redirect redisp redispatch reqadd " +
		"reqallow reqdel reqdeny reqiallow reqidel reqideny reqipass reqirep reqitarpit reqpass " +
		"reqrep reqtarpit retries retry-on rspadd rspdel rspdeny rspidel rspideny rspirep rsprep " +
		"server server-state-file-name server-template source srvexp srvtcpka-cnt srvtcpka-idle " +
		"srvtcpka-intvl srvtimeout stats stick stick-table tcp-check tcp-request tcp-response " +
		"timeout transparent unique-id-format unique-id-header use-fcgi-app use-server " +
		"use_backend usesrc",
	"userlist":       "group user",
	"peers":          "bind default-bind default-server disabled enabled log peer server shards table",
	"mailers":        "mailer timeout",
	"namespace_list": "namespace",
	"resolvers":      "accepted_payload_size hold nameserver parse-resolv-conf resolution_pool_size resolve_retries timeout",
	"http-errors":    "errorfile",
	"ring":           "backing-file description format maxlen server size timeout",
	"cache":          "max-age max-object-size max-secondary-entries process-vary total-max-size",
	"fcgi-app":       "acl docroot index log-stderr option pass-header path-info set-param",
	"log-forward":    "backlog bind dgram-bind log maxconn timeout",
	"crt-store":      "crt-base key-base load",
	"program":        "command group option user",
	"spoe-agent":     "groups log max-frame-size max-waiting-frames maxconnrate maxerrrate messages option register-var-names timeout use-backend",
	"spoe-group":     "messages",
	"spoe-message":   "acl args event",
}

// SectionHeaders maps each section keyword of HAProxy 3.0 to the keyword
// list of its body (src/*.c REGISTER_CONFIG_SECTION). The spoe-* sections
// exist only inside a SPOE configuration file.
var SectionHeaders = map[string]string{
	"global": "global", "defaults": "proxy", "frontend": "proxy", "backend": "proxy",
	"listen": "proxy", "userlist": "userlist", "peers": "peers", "mailers": "mailers",
	"namespace_list": "namespace_list", "resolvers": "resolvers", "http-errors": "http-errors",
	"ring": "ring", "cache": "cache", "fcgi-app": "fcgi-app", "log-forward": "log-forward",
	"crt-store": "crt-store", "program": "program",
}

// SPOEHeaders are the sections of a SPOE configuration file (src/flt_spoe.c
// parse_spoe_flt registers only these while it reads the file).
var SPOEHeaders = map[string]string{
	"spoe-agent": "spoe-agent", "spoe-group": "spoe-group", "spoe-message": "spoe-message",
}

// BindOptions maps every bind option of HAProxy 3.0 to the number of words
// it consumes after itself (bind_kws in src/cfgparse-ssl.c,
// src/cfgparse-tcp.c, src/cfgparse-unix.c, src/cfgparse-quic.c,
// src/listener.c, src/cli.c; `haproxy -dKcfg`). HAProxy looks an option up
// by the text before its first '(' (bind_find_kw).
var BindOptions = parseArity("ssl 0 " +
	"accept-netscaler-cip 1 accept-proxy 0 allow-0rtt 0 alpn 1 backlog 1 ca-file 1 " +
	"ca-ignore-err 1 ca-sign-file 1 ca-sign-pass 1 ca-verify-file 1 ciphers 1 ciphersuites " +
	"1 client-sigalgs 1 crl-file 1 crt 1 crt-ignore-err 1 crt-list 1 curves 1 default-crt " +
	"1 defer-accept 0 ecdhe 1 expose-fd 1 force-sslv3 0 force-tlsv10 0 force-tlsv11 0 " +
	"force-tlsv12 0 force-tlsv13 0 generate-certificates 0 gid 1 group 1 guid-prefix 1 id " +
	"1 interface 1 level 1 maxconn 1 mode 1 mss 1 name 1 namespace 1 nbconn 1 nice 1 " +
	"no-alpn 0 no-ca-names 0 no-sslv3 0 no-tls-tickets 0 no-tlsv10 0 no-tlsv11 0 no-tlsv12 " +
	"0 no-tlsv13 0 npn 1 prefer-client-ciphers 0 process 1 proto 1 quic-cc-algo 1 " +
	"quic-force-retry 0 quic-socket 1 severity-output 1 shards 1 sigalgs 1 ssl-max-ver 1 " +
	"ssl-min-ver 1 strict-sni 0 tcp-ut 1 tfo 0 thread 1 tls-ticket-keys 1 transparent 0 " +
	"uid 1 user 1 v4v6 0 v6only 0 verify 1")

// ServerOptions maps every server option of HAProxy 3.0 to the number of
// words it consumes after itself, -1 for source which consumes a variable
// number (srv_kws in src/server.c, src/cfgparse-ssl.c, src/check.c,
// src/cfgparse-tcp.c; `haproxy -dKcfg`); srv_find_kw looks an option up by
// the text before its first '('. set-proxy-v2-tlv-fmt is registered with 0
// but its parser takes one word.
var ServerOptions = parseArity("set-proxy-v2-tlv-fmt 1 source -1 " +
	"addr 1 agent-addr 1 agent-check 0 agent-inter 1 agent-port 1 agent-send 1 allow-0rtt " +
	"0 alpn 1 backup 0 ca-file 1 check 0 check-alpn 1 check-proto 1 check-send-proxy 0 " +
	"check-sni 1 check-ssl 0 check-via-socks4 0 ciphers 1 ciphersuites 1 client-sigalgs 1 " +
	"cookie 1 crl-file 1 crt 1 curves 1 disabled 0 downinter 1 enabled 0 error-limit 1 " +
	"fall 1 fastinter 1 force-sslv3 0 force-tlsv10 0 force-tlsv11 0 force-tlsv12 0 " +
	"force-tlsv13 0 guid 1 hash-key 1 id 1 init-addr 1 inter 1 log-bufsize 1 log-proto 1 " +
	"max-reuse 1 maxconn 1 maxqueue 1 minconn 1 namespace 1 no-agent-check 0 no-backup 0 " +
	"no-check 0 no-check-send-proxy 0 no-check-ssl 0 no-send-proxy 0 no-send-proxy-v2 0 " +
	"no-send-proxy-v2-ssl 0 no-send-proxy-v2-ssl-cn 0 no-ssl 0 no-ssl-reuse 0 no-sslv3 0 " +
	"no-tfo 0 no-tls-tickets 0 no-tlsv10 0 no-tlsv11 0 no-tlsv12 0 no-tlsv13 0 non-stick 0 " +
	"npn 1 observe 1 on-error 1 on-marked-down 1 on-marked-up 1 pool-conn-name 1 " +
	"pool-low-conn 1 pool-max-conn 1 pool-purge-delay 1 port 1 proto 1 proxy-v2-options 1 " +
	"redir 1 resolve-net 1 resolve-opts 1 resolve-prefer 1 resolvers 1 rise 1 send-proxy 0 " +
	"send-proxy-v2 0 send-proxy-v2-ssl 0 send-proxy-v2-ssl-cn 0 shard 1 sigalgs 1 " +
	"slowstart 1 sni 1 socks4 1 ssl 0 ssl-max-ver 1 ssl-min-ver 1 ssl-reuse 0 stick 0 " +
	"tcp-ut 1 tfo 0 tls-tickets 0 track 1 usesrc 0 verify 1 verifyhost 1 weight 1 ws 1")

// CRTListOptions maps the options of a crt-list line to the words they
// consume: ssl_crtlist_kws (src/cfgparse-ssl.c) and ckch_conf_kws
// (src/ssl_ckch.c, every one takes a value).
var CRTListOptions = parseArity("allow-0rtt 0 alpn 1 ca-file 1 ca-verify-file 1 ciphers 1 " +
	"ciphersuites 1 client-sigalgs 1 crl-file 1 curves 1 ecdhe 1 no-alpn 0 no-ca-names 0 " +
	"npn 1 sigalgs 1 ssl-max-ver 1 ssl-min-ver 1 verify 1 " +
	"alias 1 crt 1 key 1 ocsp 1 issuer 1 sctl 1 ocsp-update 1")

// HTTPActions lists the actions of http-request, http-response and
// http-after-response in HAProxy 3.0 (`haproxy -dKcfg`; src/http_act.c,
// src/vars.c, src/stick_table.c, src/cache.c, src/resolvers.c,
// src/flt_spoe.c, src/flt_bwlim.c, addons/ot). A trailing '*' marks a
// prefix action (KWF_MATCH_PREFIX): action_lookup prefers an exact name,
// else the longest such prefix. Lua registers "lua.<name>" actions only
// after lua-load.
var HTTPActions = map[string]string{
	"http-after-response": "" +
		"add-header allow capture del-acl* del-header del-map* ot-group replace-header " +
		"replace-value sc-add-gpc* sc-inc-gpc* sc-inc-gpc0* sc-inc-gpc1* sc-set-gpt* " +
		"sc-set-gpt0* set-header set-log-level set-map* set-status set-var* set-var-fmt* " +
		"strict-mode unset-var*",
	"http-request": "" +
		"add-acl* add-header allow auth cache-use capture del-acl* del-header del-map* " +
		"deny disable-l7-retry do-resolve* early-hint normalize-uri ot-group redirect " +
		"reject replace-header replace-path replace-pathq replace-uri replace-value " +
		"return sc-add-gpc* sc-inc-gpc* sc-inc-gpc0* sc-inc-gpc1* sc-set-gpt* " +
		"sc-set-gpt0* send-spoe-group set-bandwidth-limit set-bc-mark set-bc-tos set-dst " +
		"set-dst-port set-fc-mark set-fc-tos set-header set-log-level set-map* set-mark " +
		"set-method set-nice set-path set-pathq set-priority-class set-priority-offset " +
		"set-query set-src set-src-port set-timeout set-tos set-uri set-var* set-var-fmt* " +
		"silent-drop strict-mode tarpit track-sc* unset-var* use-service wait-for-body " +
		"wait-for-handshake",
	"http-response": "" +
		"add-acl* add-header allow cache-store capture del-acl* del-header del-map* deny " +
		"ot-group redirect replace-header replace-value return sc-add-gpc* sc-inc-gpc* " +
		"sc-inc-gpc0* sc-inc-gpc1* sc-set-gpt* sc-set-gpt0* send-spoe-group " +
		"set-bandwidth-limit set-fc-mark set-fc-tos set-header set-log-level set-map* " +
		"set-mark set-nice set-status set-timeout set-tos set-var* set-var-fmt* " +
		"silent-drop strict-mode track-sc* unset-var* wait-for-body",
}

// WordSet is a set of keyword names.
type WordSet map[string]bool

// NewWordSet splits a space-separated list into a set.
func NewWordSet(list string) WordSet {
	s := make(WordSet)
	for _, w := range strings.Fields(list) {
		s[w] = true
	}
	return s
}

// parseArity reads "name n name n ..." into a map.
func parseArity(list string) map[string]int {
	f := strings.Fields(list)
	m := make(map[string]int, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		n := 0
		switch f[i+1] {
		case "1":
			n = 1
		case "-1":
			n = -1
		}
		m[f[i]] = n
	}
	return m
}
