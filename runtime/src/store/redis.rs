//! The shared store on a Redis or Valkey server (feature `redis`, through
//! the `redis` crate): each operation one atomic Lua script, waits woken by
//! the server's publish/subscribe, buckets on the server's clock.
//!
//! What the server keeps, per surface namespace `as:{ns}:`:
//! - `dd:…` dedupe records: `R{fingerprint}{token}` while a call runs (for
//!   its lease), `S{fingerprint}{record}` once settled (for the window);
//! - `rl:…` buckets: a hash of tokens and the time they were counted, kept
//!   for the bucket's window;
//! - `audit`: a stream, trimmed to its newest records;
//!
//! Settlements and releases are announced on the channel `as:events`
//! (the message is the key, namespace included), shared by every surface
//! on the server.
//!
//! For "no acknowledged settlement is lost" across a restart of the
//! server, run it with `appendonly yes` and `appendfsync always` (a
//! settlement is acknowledged to the caller only after the server
//! answered it).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use redis::Script;
use redis::aio::ConnectionManager;
use tokio::sync::Notify;

use super::{BoxFuture, Claim, Lease, SharedStore, StoreError, Taken};

/// How long the store waits for the server by default, per operation and
/// per connection attempt.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The channel settlements and releases are announced on.
const EVENTS: &str = "as:events";

/// Waits the store holds at once; more are refused ([`StoreError::Full`]).
pub const MAX_WAITERS: usize = 100_000;

const CLAIM: &str = r"
local v = redis.call('GET', KEYS[1])
if v then
  if v == ('R' .. ARGV[1] .. ARGV[2]) then return {'L'} end
  if string.sub(v, 2, 33) ~= ARGV[1] then return {'C'} end
  if string.sub(v, 1, 1) == 'S' then return {'S', string.sub(v, 34)} end
  return {'R'}
end
local ttl = tonumber(ARGV[3])
if tonumber(ARGV[4]) > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
    -- Full: the party's oldest settled record (or one already gone) gives
    -- way; a running claim never does.
    local freed = false
    for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, 255)) do
      local held = redis.call('GET', member)
      if not held or string.sub(held, 1, 1) == 'S' then
        if held then redis.call('DEL', member) end
        redis.call('ZREM', KEYS[2], member)
        freed = true
        break
      end
    end
    if not freed then return {'B'} end
  end
  redis.call('ZADD', KEYS[2], now + ttl, KEYS[1])
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
redis.call('SET', KEYS[1], 'R' .. ARGV[1] .. ARGV[2], 'PX', ttl)
return {'L'}
";

const SETTLE: &str = r"
if redis.call('GET', KEYS[1]) ~= ('R' .. ARGV[1] .. ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], 'S' .. ARGV[1] .. ARGV[3], 'PX', ARGV[4])
if ARGV[5] == '1' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[3], 'XX', now + tonumber(ARGV[4]), KEYS[1])
end
redis.call('PUBLISH', KEYS[2], KEYS[1])
return 1
";

const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ('R' .. ARGV[1] .. ARGV[2]) then
  redis.call('DEL', KEYS[1])
  if ARGV[3] == '1' then redis.call('ZREM', KEYS[3], KEYS[1]) end
  redis.call('PUBLISH', KEYS[2], KEYS[1])
end
return 1
";

const TAKE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local per = limit / window
local b = redis.call('HMGET', KEYS[1], 't', 'a')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if not tokens or not at then tokens = limit; at = now end
if now > at then tokens = math.min(limit, tokens + (now - at) * per); at = now end
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.max(1, math.ceil((1 - tokens) / per)) end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'a', tostring(at))
redis.call('PEXPIRE', KEYS[1], window)
return wait
";

const PUT: &str = r"
if ARGV[3] == '1' then
  if not redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 0 end
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
redis.call('PUBLISH', KEYS[2], KEYS[1])
return 1
";

const REMOVE: &str = r"
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], KEYS[1])
return 1
";

const ENROLL: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
local longest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], math.max(now + ttl, tonumber(longest[2])))
return 1
";

const MEMBERS: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
";

/// Why [`RedisStore::connect`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RedisStoreError {
    /// The server could not be reached, or refused the connection.
    Connect(redis::RedisError),
    /// The server may evict keys that have a time to live
    /// (`maxmemory-policy` is this, not `noeviction`): under memory
    /// pressure it could drop a running call's claim and let a retry run it
    /// again, so the store refuses it.
    Evicts(String),
}

impl fmt::Display for RedisStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisStoreError::Connect(error) => {
                write!(f, "cannot connect to the Redis server: {error}")
            }
            RedisStoreError::Evicts(policy) => write!(
                f,
                "the Redis server's maxmemory-policy is `{policy}`: it could evict a running \
                 call's claim; set `maxmemory-policy noeviction` for the shared store"
            ),
        }
    }
}

impl std::error::Error for RedisStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RedisStoreError::Connect(error) => Some(error),
            RedisStoreError::Evicts(_) => None,
        }
    }
}

/// Who waits on which key, woken by the channel listener.
#[derive(Default)]
struct Waiters {
    by_key: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Waiters {
    fn wake(&self, key: &str) {
        let map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(notify) = map.get(key) {
            notify.notify_waiters();
        }
    }

    /// After a (re)subscription: everyone looks again (an announcement may
    /// have been missed while the listener was away).
    fn wake_all(&self) {
        let map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        for notify in map.values() {
            notify.notify_waiters();
        }
    }
}

/// One waiter's interest in a key, taken back when its wait ends.
struct Interest<'w> {
    waiters: &'w Waiters,
    key: &'w str,
    notify: Arc<Notify>,
}

impl Drop for Interest<'_> {
    fn drop(&mut self) {
        let mut map = self
            .waiters
            .by_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if Arc::strong_count(&self.notify) <= 2 {
            map.remove(self.key);
        }
    }
}

/// A [`SharedStore`] on a Redis or Valkey server the replicas share (see
/// the [module docs](super)).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use agent_surface::registry::Registry;
/// use agent_surface::store::{Namespace, RedisStore};
///
/// let store = RedisStore::connect("redis://127.0.0.1:6379/").await?;
/// let registry = Registry::builder()
///     .shared_store(Arc::new(store), Namespace::new("devices")?)
///     .build();
/// # drop(registry); Ok(()) }
/// ```
pub struct RedisStore {
    connection: ConnectionManager,
    waiters: Arc<Waiters>,
    listener: tokio::task::AbortHandle,
    claim: Script,
    settle: Script,
    release: Script,
    take: Script,
    put: Script,
    remove: Script,
    enroll: Script,
    members: Script,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl RedisStore {
    /// Runs `script` on a handle of the shared connection.
    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        script
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|error| unavailable(&error))
    }

    /// Runs `command` on a handle of the shared connection.
    async fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, StoreError> {
        command
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|error| unavailable(&error))
    }
}

fn unavailable(error: &redis::RedisError) -> StoreError {
    if error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
    {
        StoreError::Unavailable(error.to_string())
    } else {
        StoreError::Protocol(error.to_string())
    }
}

impl RedisStore {
    /// Connects to the server at `url` (`redis://host:port/db`; with the
    /// feature `redis-tls`, `rediss://`), with [`DEFAULT_TIMEOUT`] per
    /// operation.
    pub async fn connect(url: &str) -> Result<RedisStore, RedisStoreError> {
        RedisStore::connect_with_timeout(url, DEFAULT_TIMEOUT).await
    }

    /// [`connect`](Self::connect) with `timeout` per operation and per
    /// connection attempt: an operation the server does not answer in time
    /// fails ([`StoreError::Unavailable`]) and the call fails closed.
    pub async fn connect_with_timeout(
        url: &str,
        timeout: Duration,
    ) -> Result<RedisStore, RedisStoreError> {
        let client = redis::Client::open(url).map_err(RedisStoreError::Connect)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(Some(timeout))
            .set_connection_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(timeout);
        let connection = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(RedisStoreError::Connect)?;
        // A server that evicts keys with a time to live could drop a
        // running claim: refused. (A server that hides its configuration
        // is taken at its operator's word, and said.)
        let mut probe = connection.clone();
        match redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxmemory-policy")
            .query_async::<Vec<String>>(&mut probe)
            .await
        {
            Ok(reply) => {
                if let Some(policy) = reply.get(1)
                    && policy != "noeviction"
                {
                    return Err(RedisStoreError::Evicts(policy.clone()));
                }
            }
            Err(_) => tracing::warn!(
                "the Redis server does not show its maxmemory-policy: make sure it is `noeviction`"
            ),
        }
        let waiters = Arc::new(Waiters::default());
        // The first subscription is made before the store is handed out, so
        // no announcement after `connect` returns is missed.
        let mut pubsub = client
            .get_async_pubsub()
            .await
            .map_err(RedisStoreError::Connect)?;
        pubsub
            .subscribe(EVENTS)
            .await
            .map_err(RedisStoreError::Connect)?;
        let listener =
            tokio::spawn(listen(client, pubsub, Arc::downgrade(&waiters), timeout)).abort_handle();
        Ok(RedisStore {
            connection,
            waiters,
            listener,
            claim: Script::new(CLAIM),
            settle: Script::new(SETTLE),
            release: Script::new(RELEASE),
            take: Script::new(TAKE),
            put: Script::new(PUT),
            remove: Script::new(REMOVE),
            enroll: Script::new(ENROLL),
            members: Script::new(MEMBERS),
        })
    }

    async fn claim_now(
        &self,
        key: &str,
        lease: &Lease,
        ttl: Duration,
    ) -> Result<Claim, StoreError> {
        let (quota, max) = lease.quota().unwrap_or((key, 0));
        let reply: Vec<String> = self
            .eval(
                self.claim
                    .key(key)
                    .key(quota)
                    .arg(lease.fingerprint().as_str())
                    .arg(lease.token())
                    .arg(super::ttl_ms(ttl))
                    .arg(max),
            )
            .await?;
        match reply.as_slice() {
            [kind] if kind == "L" => Ok(Claim::Leader),
            [kind] if kind == "B" => Ok(Claim::Busy),
            [kind] if kind == "R" => Ok(Claim::Running),
            [kind] if kind == "C" => Ok(Claim::Conflict),
            [kind, record] if kind == "S" => Ok(Claim::Settled(record.clone())),
            _ => Err(StoreError::Protocol("an unknown claim reply".to_owned())),
        }
    }

    /// Registers interest in `key`'s announcements (before its first check).
    fn interest<'s>(&'s self, key: &'s str) -> Result<Interest<'s>, StoreError> {
        let mut map = self
            .waiters
            .by_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_WAITERS && !map.contains_key(key) {
            return Err(StoreError::Full);
        }
        Ok(Interest {
            waiters: &self.waiters,
            key,
            notify: Arc::clone(map.entry(key.to_owned()).or_default()),
        })
    }

    async fn put_with(
        &self,
        key: &str,
        value: &str,
        ttl: Duration,
        only_new: bool,
    ) -> Result<bool, StoreError> {
        let written: i64 = self
            .eval(
                self.put
                    .key(key)
                    .key(EVENTS)
                    .arg(value)
                    .arg(super::ttl_ms(ttl))
                    .arg(if only_new { "1" } else { "0" }),
            )
            .await?;
        Ok(written == 1)
    }

    async fn get_now(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.query(redis::cmd("GET").arg(key)).await
    }
}

/// Forwards the channel's announcements to the waiters, resubscribing
/// after a lost connection; ends with the store.
async fn listen(
    client: redis::Client,
    first: redis::aio::PubSub,
    waiters: Weak<Waiters>,
    backoff: Duration,
) {
    let mut pubsub = Some(first);
    loop {
        if let Some(subscribed) = pubsub.take() {
            if let Some(waiters) = waiters.upgrade() {
                waiters.wake_all();
            }
            let mut messages = subscribed.into_on_message();
            while let Some(message) = messages.next().await {
                let Some(waiters) = waiters.upgrade() else {
                    return;
                };
                if let Ok(key) = message.get_payload::<String>() {
                    waiters.wake(&key);
                }
            }
        }
        if waiters.strong_count() == 0 {
            return;
        }
        crate::util::time::sleep(backoff.min(Duration::from_millis(500))).await;
        if let Ok(mut again) = client.get_async_pubsub().await
            && again.subscribe(EVENTS).await.is_ok()
        {
            pubsub = Some(again);
        }
    }
}

impl SharedStore for RedisStore {
    fn name(&self) -> &str {
        "redis"
    }

    fn claim<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(self.claim_now(key, lease, ttl))
    }

    fn wait<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            let interest = self.interest(key)?;
            loop {
                let notified = interest.notify.notified();
                tokio::pin!(notified);
                // Enabled before the check: an announcement between the
                // check and the wait is not lost.
                notified.as_mut().enable();
                match self.claim_now(key, lease, ttl).await? {
                    Claim::Running => {}
                    other => return Ok(other),
                }
                // A lease that runs out is announced by nobody: look again
                // when it could have (at most the lease).
                tokio::select! {
                    () = &mut notified => {}
                    () = crate::util::time::sleep(super::bounded(ttl)) => {}
                }
            }
        })
    }

    fn settle<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        record: &'a str,
        keep: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let (quota, counted) = lease.quota().map_or((key, "0"), |(quota, _)| (quota, "1"));
            let written: i64 = self
                .eval(
                    self.settle
                        .key(key)
                        .key(EVENTS)
                        .key(quota)
                        .arg(lease.fingerprint().as_str())
                        .arg(lease.token())
                        .arg(record)
                        .arg(super::ttl_ms(keep))
                        .arg(counted),
                )
                .await?;
            Ok(written == 1)
        })
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let (quota, counted) = lease.quota().map_or((key, "0"), |(quota, _)| (quota, "1"));
            let _: i64 = self
                .eval(
                    self.release
                        .key(key)
                        .key(EVENTS)
                        .key(quota)
                        .arg(lease.fingerprint().as_str())
                        .arg(lease.token())
                        .arg(counted),
                )
                .await?;
            Ok(())
        })
    }

    fn take<'a>(
        &'a self,
        key: &'a str,
        limit: u32,
        window: Duration,
    ) -> BoxFuture<'a, Result<Taken, StoreError>> {
        Box::pin(async move {
            let wait: u64 = self
                .eval(
                    self.take
                        .key(key)
                        .arg(limit.max(1))
                        .arg(super::ttl_ms(window)),
                )
                .await?;
            Ok(if wait == 0 {
                Taken::Allowed
            } else {
                Taken::Refused {
                    retry_after_ms: wait,
                }
            })
        })
    }

    fn append<'a>(
        &'a self,
        key: &'a str,
        record: &'a str,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let _: String = self
                .query(
                    redis::cmd("XADD")
                        .arg(key)
                        .arg("MAXLEN")
                        .arg(keep.max(1))
                        .arg("*")
                        .arg("r")
                        .arg(record),
                )
                .await?;
            Ok(())
        })
    }

    fn records<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let newest: Vec<(String, Vec<String>)> = self
                .query(
                    redis::cmd("XREVRANGE")
                        .arg(key)
                        .arg("+")
                        .arg("-")
                        .arg("COUNT")
                        .arg(count),
                )
                .await?;
            Ok(newest
                .into_iter()
                .rev()
                .filter_map(|(_, fields)| fields.into_iter().nth(1))
                .collect())
        })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.put_with(key, value, ttl, false).await.map(|_| ()) })
    }

    fn put_new<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.put_with(key, value, ttl, true))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(self.get_now(key))
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let _: i64 = self.eval(self.remove.key(key).key(EVENTS)).await?;
            Ok(())
        })
    }

    fn watch<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(async move {
            let interest = self.interest(key)?;
            loop {
                let notified = interest.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if let Some(value) = self.get_now(key).await? {
                    return Ok(value);
                }
                notified.await;
            }
        })
    }

    fn enroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let _: i64 = self
                .eval(self.enroll.key(key).arg(member).arg(super::ttl_ms(ttl)))
                .await?;
            Ok(())
        })
    }

    fn unenroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let _: i64 = self.query(redis::cmd("ZREM").arg(key).arg(member)).await?;
            Ok(())
        })
    }

    fn members<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            if count == 0 {
                return Ok(Vec::new());
            }
            self.eval(self.members.key(key).arg(count)).await
        })
    }
}
