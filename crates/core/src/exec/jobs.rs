//! Media jobs: submitted through the same stages as a generation, then
//! followed on the provider's queue until they end (`crate::jobs`).
//!
//! Submission is planned among the catalog's media models (`kind: media`),
//! admitted with its prompt's tokens, and tried on each candidate in order
//! with the route's retries and failover (the loop every whole-answer request
//! shares, `whole.rs`): retries and failover apply here only, since once a
//! queue has a job, sending it elsewhere would run it twice. The job is then
//! kept ([`crate::jobs::JobStore`]) with its request's record, unwritten, and
//! its admission's reservation held in this instance.
//!
//! A poll ([`Snapshot::poll_job`]) asks the queue where the job is, with the
//! key it was submitted with; a completed job's result is fetched. A job ends
//! completed, failed (the queue's word; `job_lost` after
//! `gateway.jobs.max_failed_polls` polls in a row with no answer; `job_timeout`
//! after `max_polls`, cancelled upstream) or cancelled by its owner. Only then
//! is it metered, per second of media and per job (`pricing.per_second`,
//! `per_job`), and its record written and its reservation settled with the
//! cost, once: the end is stored first, and only the writer that stored it
//! meters.

use switchyard_protocol::jobs::{self, JobRequest, JobSpec, JobState, Submitted};

use super::whole::{Answered, Target, WholeCall};
use super::*;
use crate::jobs::{Held, Job, JobError, JobPrices, JobStatus};

/// The record's operation for a job.
pub const OPERATION: &str = "jobs";

/// A job the gateway took, as its submitter is answered.
#[derive(Debug)]
pub struct JobSubmitted {
    /// The job as kept.
    pub job: Job,
    /// The deployment whose queue has it.
    pub served: Served,
    /// The caller's rate limits after this request; `None`: none apply.
    pub rate: Option<crate::limits::RateStatus>,
}

/// The canonical request a job is planned and admitted as: its prompt as a
/// user message, asking for no text.
pub fn planned_job_request(req: &JobRequest) -> Request {
    Request {
        model: req.model.clone(),
        messages: vec![switchyard_protocol::Message::text(
            switchyard_protocol::Role::User,
            req.prompt().to_owned(),
        )],
        max_tokens: Some(0),
        user: req.user.clone(),
        ..Request::default()
    }
}

/// What a submission attempt came to.
enum Submission {
    /// A queue took it.
    Queued(Submitted),
    /// It is done already (the mock provider's).
    Done(serde_json::Value),
}

/// A job as the attempt loop submits it ([`WholeCall`]).
struct Submitting<'r> {
    req: &'r JobRequest,
}

fn job_spec(wire: Wire) -> Result<JobSpec, Failure> {
    wire.spec().jobs.ok_or_else(|| {
        Failure::Unsupported(format!("the {} wire runs no media jobs", wire.as_str()))
    })
}

impl WholeCall for Submitting<'_> {
    type Answer = (Submission, Option<Secret>);

    fn check(&self, wire: Wire, _upstream_model: &str) -> Result<(), Failure> {
        job_spec(wire).map(drop)
    }

    fn mock(&self, upstream_model: &str) -> Self::Answer {
        (Submission::Done(crate::mock::job(upstream_model, &self.req.input)), None)
    }

    fn send<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        to: Target<'a>,
        _reported: &'a mut Usage,
    ) -> impl Future<Output = Result<Self::Answer, Failure>> + Send + 'a {
        snapshot.submit_http(self.req, to)
    }
}

impl Snapshot {
    /// A submission over HTTP: the queue's id for the job, and the caller's
    /// own key where the attempt used one (kept, in this instance only, to
    /// follow the job with; a platform key is found again by its
    /// fingerprint).
    async fn submit_http(
        &self,
        req: &JobRequest,
        to: Target<'_>,
    ) -> Result<(Submission, Option<Secret>), Failure> {
        let Target { cand, wire, key, deadline, .. } = to;
        let spec = job_spec(wire)?;
        let (dest, out) = to.dest(self)?;
        let url = spec.submit_url(&cand.provider.endpoint, &cand.upstream_model);
        let remaining = deadline.saturating_duration_since(Instant::now());
        let sent = tokio::time::timeout(
            remaining,
            upstream::send_to(dest, &out, &url, spec.encode(req), false),
        )
        .await
        .map_err(|_| Failure::Transport {
            class: TransportClass::Timeout,
            message: format!("no answer to the submission within {} ms", remaining.as_millis()),
        })?;
        let (resp, minted) = sent?;
        let redactor = Redactor { platform: &cand.provider.secrets, used: key, minted: &minted };
        if !resp.status().is_success() {
            return Err(upstream::read_failure(resp, wire, &redactor, deadline).await);
        }
        let bytes = upstream::read_body(resp, MAX_JOB_ANSWER, deadline).await?;
        let submitted = spec
            .parse_submitted(&bytes)
            .map_err(|e| Failure::from_protocol(e).redacted(&redactor))?;
        let byok = key.filter(|k| !cand.provider.keys.contains(k)).cloned();
        Ok((Submission::Queued(submitted), byok))
    }
}

/// The most a queue's answer (a submission, a status, a result) may hold.
const MAX_JOB_ANSWER: usize = 8 << 20;

/// How long one poll may take.
const POLL_TIMEOUT: Duration = Duration::from_secs(30);

impl Snapshot {
    /// Submit `req`, `inbound` being the request as planned
    /// ([`planned_job_request`]): plan, admit, attempt with retries and
    /// failover, then keep the job for `owner` ([`crate::Engine::submit_job`]).
    pub async fn submit_job(
        self: Arc<Self>,
        mut inbound: Inbound,
        req: JobRequest,
        owner: String,
        runtime: Arc<Runtime>,
        sink: SharedSink,
    ) -> Result<JobSubmitted, GatewayError> {
        let estimate = estimate::output_tokens(req.prompt().len());
        let (mut guard, mut plan) = self
            .open_whole(&mut inbound, &runtime, sink.clone(), Purpose::Job, OPERATION, estimate)
            .await?;
        let call = Submitting { req: &req };
        let Answered { index, answer: (submission, byok), tried } =
            self.whole_loop(&inbound, &call, &mut plan, &runtime, &mut guard).await?;
        let Some(cand) = plan.candidates.get(index) else {
            // Unreachable: the index is the plan's.
            return Err(guard.fail(inbound.format, wrong_form()));
        };
        let served = Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
            dropped_tools: Vec::new(),
        };
        let id = format!("job_{}", inbound.id);
        let rec = &mut guard.rec;
        rec.usage = Usage {
            input_tokens: Some(inbound.input_estimate()),
            output_tokens: Some(0),
            ..Usage::default()
        };
        rec.estimated = true;
        rec.served_provider = Some(served.provider.clone());
        rec.upstream_model = Some(served.upstream_model.clone());
        rec.descriptor = format!("{} job:{id}", descriptor(&plan, &tried)).trim_start().to_owned();
        let rate = guard.reservation.as_ref().and_then(|(_, r)| r.status);
        let (record, reservation) = guard.defer();
        let now = UnixMs::now().0;
        let settings = self.catalog.settings.jobs;
        let credential = match &byok {
            Some(_) => None,
            None => runtime_credential(&record),
        };
        let mut job = Job {
            id,
            owner,
            model: plan.public_model.clone(),
            provider: cand.provider.name.clone(),
            deployment: cand.label(),
            upstream_model: cand.upstream_model.clone(),
            upstream_id: String::new(),
            credential,
            status: JobStatus::Queued,
            queue_position: None,
            input: req.input,
            result: None,
            error: None,
            created_ms: now,
            updated_ms: now,
            completed_ms: None,
            polls: 0,
            failed_polls: 0,
            // Due at once: the first poll is the poller's next tick.
            next_poll_ms: now,
            lease_until_ms: 0,
            prices: JobPrices::of(cand.pricing.as_ref(), cand.provider.markup),
            seconds: None,
            cost_usd: None,
            record: Some(Box::new(record)),
            expires_ms: now + settings.retention_hours.saturating_mul(3_600_000),
        };
        runtime.job_holds.hold(&job.id, Held { reservation, byok });
        let done = match submission {
            Submission::Queued(s) => {
                job.upstream_id = s.upstream_id;
                job.queue_position = s.queue_position;
                None
            }
            Submission::Done(result) => Some(result),
        };
        if let Err(e) = runtime.jobs.put(&job).await {
            // The queue has it, but the gateway could not keep it: stop it
            // there, and write its record now rather than lose it.
            tracing::error!(job = %job.id, "media jobs: {e}");
            let _ = self.cancel_upstream(&job, &runtime).await;
            let error = JobError { code: "job_not_kept".into(), message: e.to_string() };
            if let Some(rec) = self.end(&mut job, End::Failed(error)) {
                settle(&job, rec, &runtime, &sink);
            }
            return Err(GatewayError::new(
                ErrorCode::UpstreamError,
                format!("the job was submitted but could not be kept: {e}"),
            ));
        }
        if let Some(result) = done {
            let ended = self.end(&mut job, End::Completed { result, compute: None });
            job = self.keep(job, ended, &runtime, &sink).await;
        }
        Ok(JobSubmitted { job, served, rate })
    }

    /// Ask `job`'s queue where it is, once, and keep what it says: the job as
    /// it now is. An end is metered and recorded here.
    pub async fn poll_job(&self, mut job: Job, runtime: &Runtime, sink: &SharedSink) -> Job {
        let settings = self.catalog.settings.jobs;
        let now = UnixMs::now().0;
        job.polls += 1;
        job.updated_ms = now;
        job.lease_until_ms = 0;
        job.next_poll_ms = now + settings.poll_interval_ms;
        let mut ended = None;
        match self.ask(&job, runtime).await {
            Ok(Asked::Waiting(JobState::Queued { position })) => {
                job.status = JobStatus::Queued;
                job.queue_position = position;
                job.failed_polls = 0;
            }
            Ok(Asked::Waiting(_)) => {
                job.status = JobStatus::InProgress;
                job.queue_position = None;
                job.failed_polls = 0;
            }
            Ok(Asked::Ended(end)) => ended = self.end(&mut job, end),
            Err(message) => {
                job.failed_polls += 1;
                tracing::debug!(job = %job.id, failed_polls = job.failed_polls, "media job poll: {message}");
                if job.failed_polls >= settings.max_failed_polls.max(1) {
                    let message = format!(
                        "no answer from {} about the job for {} polls: {message}",
                        job.provider, job.failed_polls
                    );
                    let lost = JobError { code: "job_lost".into(), message };
                    ended = self.end(&mut job, End::Failed(lost));
                }
            }
        }
        if !job.status.is_final() && job.polls >= settings.max_polls.max(1) {
            let _ = self.cancel_upstream(&job, runtime).await;
            let message =
                format!("still running after {} polls (gateway.jobs.max_polls)", job.polls);
            ended =
                self.end(&mut job, End::Failed(JobError { code: "job_timeout".into(), message }));
        }
        self.keep(job, ended, runtime, sink).await
    }

    /// Cancel `job` for its owner: the queue is told, and the job ends
    /// cancelled (an ended job is answered as it is).
    pub async fn cancel_job(&self, mut job: Job, runtime: &Runtime, sink: &SharedSink) -> Job {
        if job.status.is_final() {
            return job;
        }
        if let Err(message) = self.cancel_upstream(&job, runtime).await {
            // The queue may run it to the end regardless; the owner asked for
            // it to stop, and it is not billed here.
            tracing::warn!(job = %job.id, "media job cancel: {message}");
        }
        job.updated_ms = UnixMs::now().0;
        let ended = self.end(&mut job, End::Cancelled);
        self.keep(job, ended, runtime, sink).await
    }

    /// Store `job`, and where it has just ended (`ended`: its finished
    /// record), meter it: its record written, its reservation settled. Only
    /// the writer whose end is stored meters, so an end two writers reach at
    /// once (a cancel and the poller's last answer) is metered once; where an
    /// end stored by another came first, that one is the job. An end that
    /// could not be stored is not metered: the job is polled again.
    async fn keep(
        &self,
        job: Job,
        ended: Option<RequestRecord>,
        runtime: &Runtime,
        sink: &SharedSink,
    ) -> Job {
        match runtime.jobs.put(&job).await {
            Ok(true) => {
                if let Some(rec) = ended {
                    settle(&job, rec, runtime, sink);
                }
                job
            }
            Ok(false) => match runtime.jobs.get(&job.owner, &job.id).await {
                Ok(Some(kept)) => kept,
                _ => job,
            },
            Err(e) => {
                tracing::warn!(job = %job.id, "media jobs: {e}");
                job
            }
        }
    }
}

/// The fingerprint of the credential a submission's answering attempt used.
fn runtime_credential(record: &RequestRecord) -> Option<String> {
    record.attempts.iter().rev().find(|a| a.outcome == "ok").and_then(|a| a.credential.clone())
}

/// What a poll learned.
enum Asked {
    Waiting(JobState),
    Ended(End),
}

/// How a job ended.
enum End {
    Completed { result: serde_json::Value, compute: Option<f64> },
    Failed(JobError),
    Cancelled,
}

/// The queue a job is on, and the key to ask it with.
struct Queue<'a> {
    dest: upstream::Dest<'a>,
    spec: JobSpec,
}

impl Snapshot {
    /// The job's provider as configured now, and its key: the one it was
    /// submitted with.
    fn queue<'a>(&'a self, job: &'a Job, byok: Option<&'a Secret>) -> Result<Queue<'a>, String> {
        let provider = self
            .catalog
            .provider(&job.provider)
            .ok_or_else(|| format!("provider {} is no longer configured", job.provider))?;
        let ProviderKind::Wire(wire) = provider.kind else {
            return Err(format!("provider {} calls no queue", job.provider));
        };
        let spec = job_spec(wire).map_err(Failure::into_message)?;
        let runtime = self
            .runtimes
            .get(&job.provider)
            .ok_or_else(|| format!("provider {} has no client", job.provider))?;
        let key = match (byok, &job.credential) {
            (Some(k), _) => Some(k),
            (None, Some(fp)) => {
                Some(provider.keys.iter().find(|k| k.fingerprint() == *fp).ok_or_else(|| {
                    format!("the key job {} was submitted with is no longer configured", job.id)
                })?)
            }
            (None, None) if provider.keys.is_empty() => None,
            (None, None) => {
                return Err(format!(
                    "job {} was submitted with the caller's own key, which is not kept past the \
                     instance that took it",
                    job.id
                ));
            }
        };
        let dest = upstream::Dest {
            runtime,
            spec: provider,
            wire,
            key,
            upstream_model: &job.upstream_model,
        };
        Ok(Queue { dest, spec })
    }

    /// One upstream call of a job (`GET` status or result, `PUT` cancel): its
    /// status and body, secrets scrubbed.
    async fn job_call(&self, q: &Queue<'_>, call: jobs::Call) -> Result<(u16, Bytes), String> {
        let url = reqwest::Url::parse(&call.url)
            .map_err(|e| format!("the job's URL is not valid: {e}"))?;
        let method = if call.method == "PUT" { http::Method::PUT } else { http::Method::GET };
        let deadline = Instant::now() + POLL_TIMEOUT;
        let sent = tokio::time::timeout(POLL_TIMEOUT, upstream::bodiless(q.dest, method, url))
            .await
            .map_err(|_| format!("no answer within {} s", POLL_TIMEOUT.as_secs()))?;
        let (resp, minted) = sent.map_err(Failure::into_message)?;
        let redactor =
            Redactor { platform: &q.dest.spec.secrets, used: q.dest.key, minted: &minted };
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            let bytes = upstream::read_body(resp, MAX_JOB_ANSWER, deadline)
                .await
                .map_err(|f| f.redacted(&redactor).into_message())?;
            Ok((status, bytes))
        } else {
            let f = upstream::read_failure(resp, q.dest.wire, &redactor, deadline).await;
            Ok((status, Bytes::from(f.into_message())))
        }
    }

    /// Where the job is, and its result once completed; `Err`: no answer to
    /// count against it.
    async fn ask(&self, job: &Job, runtime: &Runtime) -> Result<Asked, String> {
        let byok = runtime.job_holds.byok(&job.id);
        let q = self.queue(job, byok.as_ref())?;
        let endpoint = &q.dest.spec.endpoint;
        let (status, body) = self
            .job_call(&q, q.spec.status(endpoint, &job.upstream_model, &job.upstream_id))
            .await?;
        if !(200..300).contains(&status) {
            return Err(format!("status {status}: {}", String::from_utf8_lossy(&body)));
        }
        let state = q.spec.parse_status(&body).map_err(|e| e.to_string())?;
        let JobState::Completed { inference_seconds, error } = state else {
            return Ok(Asked::Waiting(state));
        };
        let (status, body) = self
            .job_call(&q, q.spec.result(endpoint, &job.upstream_model, &job.upstream_id))
            .await?;
        match status {
            200..=299 => {
                let result: serde_json::Value = serde_json::from_slice(&body)
                    .map_err(|e| format!("the job's result is not JSON: {e}"))?;
                Ok(Asked::Ended(End::Completed { result, compute: inference_seconds }))
            }
            // The job's own failure: the model refused its input, or it broke.
            400..=499 if status != 404 && status != 408 && status != 429 => {
                let message = String::from_utf8_lossy(&body).into_owned();
                let message = error.map_or(message.clone(), |e| format!("{e}: {message}"));
                Ok(Asked::Ended(End::Failed(JobError { code: "job_failed".into(), message })))
            }
            _ => Err(format!("result: status {status}: {}", String::from_utf8_lossy(&body))),
        }
    }

    async fn cancel_upstream(&self, job: &Job, runtime: &Runtime) -> Result<(), String> {
        if job.upstream_id.is_empty() {
            return Ok(());
        }
        let byok = runtime.job_holds.byok(&job.id);
        let q = self.queue(job, byok.as_ref())?;
        let call = q.spec.cancel(&q.dest.spec.endpoint, &job.upstream_model, &job.upstream_id);
        let (status, body) = self.job_call(&q, call).await?;
        match status {
            200..=299 => Ok(()),
            _ => Err(format!("status {status}: {}", String::from_utf8_lossy(&body))),
        }
    }

    /// End `job`: its status, result or error, its seconds and cost, and its
    /// record finished, to be written once the end is stored ([`Snapshot::keep`]).
    fn end(&self, job: &mut Job, end: End) -> Option<RequestRecord> {
        let now = UnixMs::now().0;
        job.completed_ms = Some(now);
        job.updated_ms = now;
        job.queue_position = None;
        let (status, code) = match end {
            End::Completed { result, compute } => {
                job.status = JobStatus::Completed;
                let seconds = jobs::output_seconds(&result, &job.input)
                    .map(|(s, from)| (s, from.as_str().to_owned()))
                    .or_else(|| compute.map(|s| (s, "compute".to_owned())));
                job.cost_usd = crate::record::job_cost(
                    seconds.as_ref().map(|(s, _)| *s),
                    Some(&job.prices.pricing()),
                );
                job.seconds = seconds;
                job.result = Some(result);
                (200, None)
            }
            End::Failed(error) => {
                job.status = JobStatus::Failed;
                job.cost_usd = Some(0.0);
                let code = error.code.clone();
                job.error = Some(error);
                (502, Some(code))
            }
            End::Cancelled => {
                job.status = JobStatus::Cancelled;
                job.cost_usd = Some(0.0);
                (499, Some("job_cancelled".to_owned()))
            }
        };
        let mut rec = *job.record.take()?;
        rec.status = status;
        rec.error_code = code;
        rec.total_ms = now.saturating_sub(rec.time_ms);
        rec.cost_usd = job.cost_usd;
        let mut notes = vec![format!("job_status:{}", job.status.as_str())];
        if let Some((s, from)) = &job.seconds {
            notes.push(format!("seconds:{s}:{from}"));
        }
        rec.descriptor = format!("{} {}", rec.descriptor, notes.join(" ")).trim_start().to_owned();
        Some(rec)
    }
}

/// Write an ended job's record and settle its reservation with its cost.
fn settle(job: &Job, rec: RequestRecord, runtime: &Runtime, sink: &SharedSink) {
    // Jobs are few and long: each end is worth a line.
    tracing::info!(job = %job.id, status = job.status.as_str(), cost_usd = ?job.cost_usd, "media job ended");
    if let Some(Held { reservation: Some((admission, reservation)), .. }) =
        runtime.job_holds.take(&job.id)
        && !reservation.nothing
        && let Ok(rt) = tokio::runtime::Handle::try_current()
    {
        let (usage, cost) = (rec.usage, rec.cost_usd);
        rt.spawn(async move { admission.settle(reservation, usage, cost).await });
    }
    sink.record(rec);
}

/// Poll the jobs due now, at most `limit`, each once: what the gateway's
/// poller does every `gateway.jobs.poll_interval_ms`. How many were polled.
pub(crate) async fn poll_due(engine: &crate::Engine, limit: usize) -> usize {
    let snapshot = engine.snapshot();
    let settings = snapshot.catalog.settings.jobs;
    let now = UnixMs::now().0;
    // Held long enough for every claimed job's poll to end first.
    let lease = POLL_TIMEOUT.as_millis() as u64 * 3 + settings.poll_interval_ms;
    let due = match engine.runtime.jobs.claim(now, lease, limit).await {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!("media jobs: {e}");
            return 0;
        }
    };
    let n = due.len();
    let polls = due.into_iter().map(|job| snapshot.poll_job(job, &engine.runtime, &engine.sink));
    futures_util::future::join_all(polls).await;
    n
}
