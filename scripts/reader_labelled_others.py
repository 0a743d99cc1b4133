"""The second labelled set: served items phrased as others phrase them, not as healthd does.

Written and labelled by hand before the reader was changed for them (issue 38), in the
registers real memories serve: Mem0's extracted memories (short third-person or subject-less
facts: "User prefers aisle seats", "Project decision: use Postgres"), AgentCore's semantic,
user-preference and summary records, Graphiti's edge facts ("Bob likes bananas", relation
names in capitals, valid/invalid times beside the fact), and people's notes and summaries
(stand-up notes, handover docs, tables of several services). Each item names the failure
kind it exercises (``kind``) and where its style comes from (``style``). Labels say what a
careful person reads in the text about the key: ``asserts`` and ``negates`` among the values
the key has held, ``other`` for a value the text asserts for the key that the key never held
(spelled as the text spells it). Run it to write healthd/data/reader_labelled_others.jsonl.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STYLES = {
    "mem0": "Mem0 extracted memories: docs.mem0.ai/core-concepts/how-it-works ('I prefer aisle "
    "seats' -> 'User prefers aisle seats', 'Let's use Postgres' -> 'Project decision: use "
    "Postgres'); mem0/configs/prompts.py few-shot facts ('Is a software engineer', 'Had a "
    "meeting with John')",
    "graphiti": "Graphiti EntityEdge.fact strings: help.getzep.com/graphiti/working-with-data/"
    "adding-fact-triples (edge LIKES, fact 'Bob likes bananas'); quickstart facts ('Kamala "
    "Harris is the Attorney General of California'), listed with valid/invalid times as "
    "'- {fact} (valid from ...) (invalid since ...)'",
    "agentcore": "AgentCore Memory records: semantic strategy facts ('The user is running "
    "version 2.1 of the software.', docs.aws.amazon.com/bedrock-agentcore/latest/devguide/"
    "semantic-memory-strategy.html), user-preference records {context, preference, "
    "categories}, summary strategy <topic name=...>, metadata consolidated LATEST_VALUE "
    "('priority escalated from medium to high', aws.amazon.com/blogs/machine-learning/"
    "structured-memory-filtering-with-metadata-in-agentcore-memory/)",
    "notes": "people's notes: stand-up notes, handover docs, chat messages, READMEs",
    "summary": "summaries of several subjects: status digests, bullet lists, markdown tables",
}

KEYS = {
    "co": ("checkout", "owners", ["@kim", "@lee"]),
    "gw": ("gateway", "language", ["go", "node"]),
    "ob": ("orders", "broker", ["kafka", "rabbitmq"]),
    "bs": ("billing", "source_of_truth", ["billing-v2", "billing-v3"]),
    "ps": ("payments", "source_of_truth", ["payments-v1", "payments-v2"]),
    "tf": ("api", "dependency:github.com/stretchr/testify", ["v1.8.4", "v1.9.0"]),
    "px": ("ledger", "dependency:github.com/jackc/pgx/v5", ["v5.5.0", "v5.6.0"]),
    "cb": ("cli", "dependency:github.com/spf13/cobra", ["v1.7.0", "v1.8.0"]),
    "s3": ("uploader", "dependency:@aws-sdk/client-s3", ["3.400.0", "3.600.0"]),
    "pg": ("orders", "dependency:postgres", ["14", "16"]),
    "dj": ("reports", "dependency:django", ["4.2", "5.0"]),
    "so": ("search", "owners", ["@maria", "@tom"]),
    "ro": ("refunds", "owners", ["@ana", "@ben"]),
    "oc": ("payments", "on_call", ["@ana", "@ben"]),
    "lb": ("checkout", "latency_budget", ["p99 < 300 ms", "p99 < 250 ms"]),
    "ho": ("api", "hosting", ["ecs", "kubernetes"]),
    "ss": ("sessions", "store", ["redis", "memcached"]),
    "nl": ("notifications", "language", ["python", "go"]),
    "ci": ("monorepo", "ci", ["jenkins", "github actions"]),
}

# (source, kind, key, text, asserts, negates, other); one item a line, as written by hand
# fmt: off
Item = tuple[str, str, str, str, list[str], list[str], list[str]]

# --- another subject's memory, served beside the one asked about: unread for the key ------
SUBJECT: list[Item] = [
    ("mem0", "subject", "co", "Kim runs the search service", [], [], []),
    ("mem0", "subject", "co", "Lee has been away since Monday", [], [], []),
    ("mem0", "subject", "co", "Kim is the tech lead for the mobile app", [], [], []),
    ("mem0", "subject", "co", "Lee owns the inventory service", [], [], []),
    ("mem0", "subject", "co", "Works with Kim on the search rewrite", [], [], []),
    ("graphiti", "subject", "co", "Kim OWNS search service", [], [], []),
    ("graphiti", "subject", "co", "Lee is the maintainer of the refunds API", [], [], []),
    ("graphiti", "subject", "co", "Kim is a member of the platform team", [], [], []),
    ("agentcore", "subject", "co", "The user said Lee now owns the cart-api.", [], [], []),
    ("notes", "subject", "co", "Kim: out Thursday, Lee covering search pages", [], [], []),
    ("mem0", "subject", "gw", "The exporter is written in Go", [], [], []),
    ("mem0", "subject", "gw", "Prefers Node for internal tooling", [], [], []),
    ("graphiti", "subject", "gw", "metrics-exporter IS_WRITTEN_IN Go", [], [], []),
    ("graphiti", "subject", "gw", "The billing worker is implemented in Node.js", [], [], []),
    ("agentcore", "subject", "gw", "The user is rewriting the CLI in Go.", [], [], []),
    ("notes", "subject", "gw", "scheduler service: Go. admin UI: Node.", [], [], []),
    ("mem0", "subject", "ob", "Notifications publish to RabbitMQ", [], [], []),
    ("graphiti", "subject", "ob", "inventory service CONSUMES FROM Kafka", [], [], []),
    ("agentcore", "subject", "ob", "The analytics pipeline reads events from Kafka.", [], [], []),
    ("notes", "subject", "ob", "shipping moved its events to RabbitMQ last sprint", [], [], []),
    ("mem0", "subject", "bs", "Invoices service treats billing-v3 exports as read-only input", [], [], []),
    ("graphiti", "subject", "ps", "refunds-v2 is the source of truth for refunds", [], [], []),
    ("agentcore", "subject", "ps", "The user confirmed ledger-v2 is the system of record for the ledger.", [], [], []),
    ("mem0", "subject", "tf", "The worker repo uses testify v1.9.0", [], [], []),
    ("graphiti", "subject", "tf", "cli DEPENDS_ON github.com/stretchr/testify v1.8.4", [], [], []),
    ("mem0", "subject", "pg", "The analytics database runs Postgres 16", [], [], []),
    ("agentcore", "subject", "pg", "The user mentioned that the inventory DB is on PostgreSQL 14.", [], [], []),
    ("mem0", "subject", "so", "Maria owns analytics", [], [], []),
    ("mem0", "subject", "so", "Tom is on vacation until the 14th", [], [], []),
    ("graphiti", "subject", "so", "Tom LEADS data platform team", [], [], []),
    ("graphiti", "subject", "ro", "Ben is the owner of checkout", [], [], []),
    ("agentcore", "subject", "ro", "The user said Ana handles the fraud rules.", [], [], []),
    ("mem0", "subject", "oc", "Ben is on call for search this week", [], [], []),
    ("graphiti", "subject", "oc", "Ana IS_ON_CALL_FOR identity", [], [], []),
    ("mem0", "subject", "lb", "Search latency budget is p99 < 300 ms", [], [], []),
    ("mem0", "subject", "ho", "The docs site is hosted on Kubernetes", [], [], []),
    ("graphiti", "subject", "ho", "worker RUNS_ON ECS", [], [], []),
    ("mem0", "subject", "ss", "The rate limiter keeps its counters in Redis", [], [], []),
    ("mem0", "subject", "nl", "The ingest job is written in Python", [], [], []),
    ("notes", "subject", "ci", "The website repo builds on GitHub Actions", [], [], []),
    ("notes", "subject", "dj", "admin-portal is on Django 5.0 since March", [], [], []),
    ("agentcore", "subject", "cb", "The user's deploy tool pins github.com/spf13/cobra v1.8.0.", [], [], []),
]

# --- a value the key never held: asserts nothing among values, ``other`` holds it -----------
INVENTED: list[Item] = [
    ("graphiti", "invented", "gw", "gateway is implemented in Elixir", [], [], ["Elixir"]),
    ("mem0", "invented", "gw", "The gateway is written in Rust", [], [], ["Rust"]),
    ("mem0", "invented", "gw", "Gateway service uses Java", [], [], ["Java"]),
    ("agentcore", "invented", "gw", "The user mentioned the gateway was built with Kotlin.", [], [], ["Kotlin"]),
    ("graphiti", "invented", "gw", "gateway IS_WRITTEN_IN Scala", [], [], ["Scala"]),
    ("notes", "invented", "gw", "gateway: TypeScript, deployed on ECS", [], [], ["TypeScript"]),
    ("graphiti", "invented", "ob", "orders publishes to Pulsar", [], [], ["Pulsar"]),
    ("mem0", "invented", "ob", "Orders service uses NATS for messaging", [], [], ["NATS"]),
    ("agentcore", "invented", "ob", "The user said the orders events go through Amazon SQS.", [], [], ["Amazon SQS"]),
    ("mem0", "invented", "ob", "The orders broker is Redpanda", [], [], ["Redpanda"]),
    ("notes", "invented", "ob", "orders -> emits on Kinesis", [], [], ["Kinesis"]),
    ("graphiti", "invented", "bs", "billing-v4 is the system of record", [], [], ["billing-v4"]),
    ("mem0", "invented", "bs", "Billing's source of truth is the Stripe dashboard", [], [], ["the Stripe dashboard"]),
    ("agentcore", "invented", "bs", "The user stated that billing data is authoritative in NetSuite.", [], [], ["NetSuite"]),
    ("graphiti", "invented", "ps", "payments-v3 is the source of truth for payments", [], [], ["payments-v3"]),
    ("mem0", "invented", "ps", "Payments ledger of record is Snowflake", [], [], ["Snowflake"]),
    ("mem0", "invented", "co", "Priya owns checkout", [], [], ["Priya"]),
    ("graphiti", "invented", "co", "Omar OWNS checkout service", [], [], ["Omar"]),
    ("agentcore", "invented", "co", "The user said checkout is owned by the payments guild.", [], [], ["the payments guild"]),
    ("notes", "invented", "co", "checkout owner: @dana", [], [], ["@dana"]),
    ("graphiti", "invented", "co", "Ana owns refunds; Ben owns checkout", [], [], ["Ben"]),
    ("mem0", "invented", "so", "Search is maintained by Priya", [], [], ["Priya"]),
    ("graphiti", "invented", "so", "Jonas IS_OWNER_OF search", [], [], ["Jonas"]),
    ("mem0", "invented", "ro", "Refunds are owned by Carla", [], [], ["Carla"]),
    ("mem0", "invented", "oc", "Dev is on call for payments this week", [], [], ["Dev"]),
    ("agentcore", "invented", "oc", "The user mentioned that Sam is the payments on-call.", [], [], ["Sam"]),
    ("mem0", "invented", "tf", "api depends on testify v1.10.0", [], [], ["v1.10.0"]),
    ("graphiti", "invented", "tf", "api DEPENDS_ON stretchr/testify v1.7.1", [], [], ["v1.7.1"]),
    ("mem0", "invented", "px", "Ledger uses pgx v5.7.1", [], [], ["v5.7.1"]),
    ("mem0", "invented", "cb", "The cli is built on cobra v1.9.1", [], [], ["v1.9.1"]),
    ("mem0", "invented", "pg", "Orders database runs on Postgres 15", [], [], ["15"]),
    ("graphiti", "invented", "pg", "orders DEPENDS_ON PostgreSQL 17", [], [], ["17"]),
    ("agentcore", "invented", "dj", "The user is running Django 3.2 for the reports app.", [], [], ["3.2"]),
    ("mem0", "invented", "nl", "Notifications service is written in Ruby", [], [], ["Ruby"]),
    ("graphiti", "invented", "nl", "notifications IS_IMPLEMENTED_IN Elixir", [], [], ["Elixir"]),
    ("mem0", "invented", "ss", "Sessions are stored in DynamoDB", [], [], ["DynamoDB"]),
    ("agentcore", "invented", "ss", "The user said session data lives in Postgres.", [], [], ["Postgres"]),
    ("mem0", "invented", "ho", "The api runs on Fly.io", [], [], ["Fly.io"]),
    ("notes", "invented", "ho", "api is hosted on Nomad", [], [], ["Nomad"]),
    ("mem0", "invented", "ci", "Monorepo CI runs on CircleCI", [], [], ["CircleCI"]),
    ("graphiti", "invented", "ci", "monorepo USES Buildkite for CI", [], [], ["Buildkite"]),
    ("mem0", "invented", "lb", "Checkout latency budget is p99 < 400 ms", [], [], ["p99 < 400 ms"]),
]

# --- dependency keys named as texts name them: module path, last segments, common name ------
MODULE: list[Item] = [
    ("mem0", "module", "tf", "api uses testify v1.9.0", ["v1.9.0"], [], []),
    ("mem0", "module", "tf", "The api module depends on stretchr/testify 1.9.0", ["v1.9.0"], [], []),
    ("graphiti", "module", "tf", "api DEPENDS_ON github.com/stretchr/testify v1.8.4", ["v1.8.4"], [], []),
    ("agentcore", "module", "tf", "The user is running testify 1.8.4 in the api tests.", ["v1.8.4"], [], []),
    ("notes", "module", "tf", "api go.mod: github.com/stretchr/testify v1.9.0", ["v1.9.0"], [], []),
    ("mem0", "module", "tf", "Bumped testify from v1.8.4 to v1.9.0 in api", ["v1.9.0"], ["v1.8.4"], []),
    ("notes", "module", "tf", "api: testify 1.8.4 -> 1.9.0 (dependabot)", ["v1.9.0"], ["v1.8.4"], []),
    ("graphiti", "module", "tf", "api uses the Testify assertion library, version 1.9", ["v1.9.0"], [], []),
    ("mem0", "module", "tf", "api no longer pins testify v1.8.4", [], ["v1.8.4"], []),
    ("mem0", "module", "tf", "api uses gotest.tools v3.5.0", [], [], []),
    ("mem0", "module", "px", "ledger uses pgx v5.6.0", ["v5.6.0"], [], []),
    ("graphiti", "module", "px", "ledger DEPENDS_ON jackc/pgx v5.5.0", ["v5.5.0"], [], []),
    ("notes", "module", "px", "ledger go.mod: github.com/jackc/pgx/v5 v5.6.0", ["v5.6.0"], [], []),
    ("agentcore", "module", "px", "The user upgraded the ledger's pgx driver from 5.5.0 to 5.6.0.", ["v5.6.0"], ["v5.5.0"], []),
    ("mem0", "module", "px", "Ledger talks to Postgres through pgx/v5 5.5", ["v5.5.0"], [], []),
    ("mem0", "module", "px", "ledger uses lib/pq 1.10.9", [], [], []),
    ("mem0", "module", "cb", "cli is built with Cobra v1.8.0", ["v1.8.0"], [], []),
    ("graphiti", "module", "cb", "cli DEPENDS_ON spf13/cobra 1.7.0", ["v1.7.0"], [], []),
    ("notes", "module", "cb", "cli: github.com/spf13/cobra v1.7.0 => v1.8.0", ["v1.8.0"], ["v1.7.0"], []),
    ("mem0", "module", "cb", "cli uses spf13/viper v1.8.0 for config", [], [], []),
    ("mem0", "module", "s3", "uploader uses the AWS SDK S3 client 3.600.0", ["3.600.0"], [], []),
    ("notes", "module", "s3", "uploader package.json: \"@aws-sdk/client-s3\": \"^3.400.0\"", ["3.400.0"], [], []),
    ("graphiti", "module", "s3", "uploader DEPENDS_ON client-s3 3.600.0", ["3.600.0"], [], []),
    ("mem0", "module", "s3", "uploader uses @aws-sdk/client-sqs 3.600.0", [], [], []),
    ("mem0", "module", "pg", "Orders DB is PostgreSQL 16", ["16"], [], []),
    ("graphiti", "module", "pg", "orders DEPENDS_ON pg 14", ["14"], [], []),
    ("agentcore", "module", "pg", "The user upgraded the orders database from Postgres 14 to 16.", ["16"], ["14"], []),
    ("mem0", "module", "pg", "orders uses pgbouncer 1.16", [], [], []),
    ("mem0", "module", "dj", "reports runs Django 5.0", ["5.0"], [], []),
    ("notes", "module", "dj", "reports: django==4.2 in requirements.txt", ["4.2"], [], []),
    ("graphiti", "module", "dj", "reports DEPENDS_ON Django v4.2", ["4.2"], [], []),
    ("mem0", "module", "dj", "reports uses django-rest-framework 3.15", [], [], []),
]

# --- the old value named in a demoted role beside the new: new asserted, old negated -------
DEMOTED: list[Item] = [
    ("notes", "demoted", "ps", "payments: v2 is authoritative now; v1 is kept read-only", ["payments-v2"], ["payments-v1"], []),
    ("mem0", "demoted", "ps", "payments-v2 is the source of truth; payments-v1 is kept read-only for audits", ["payments-v2"], ["payments-v1"], []),
    ("agentcore", "demoted", "ps", "The user said payments-v2 is authoritative and payments-v1 only serves historical lookups.", ["payments-v2"], ["payments-v1"], []),
    ("graphiti", "demoted", "ps", "payments-v1 IS_ARCHIVE_OF payments; payments-v2 IS_SOURCE_OF_TRUTH_FOR payments", ["payments-v2"], ["payments-v1"], []),
    ("notes", "demoted", "ps", "payments-v2 is primary, payments-v1 stays around as a read replica", ["payments-v2"], ["payments-v1"], []),
    ("mem0", "demoted", "bs", "billing-v3 is the system of record, billing-v2 is a fallback only", ["billing-v3"], ["billing-v2"], []),
    ("agentcore", "demoted", "bs", "The user explained billing-v3 is authoritative while billing-v2 is frozen.", ["billing-v3"], ["billing-v2"], []),
    ("notes", "demoted", "bs", "billing-v3 = truth. billing-v2 = archive, don't write to it", ["billing-v3"], ["billing-v2"], []),
    ("graphiti", "demoted", "bs", "billing-v2 serves as a read-only mirror of billing-v3", ["billing-v3"], ["billing-v2"], []),
    ("mem0", "demoted", "ob", "Orders publishes to Kafka; RabbitMQ is only kept for the legacy consumers", ["kafka"], ["rabbitmq"], []),
    ("notes", "demoted", "ob", "orders: Kafka is the bus now, RabbitMQ is kept as a dead-letter sink until Q3", ["kafka"], ["rabbitmq"], []),
    ("mem0", "demoted", "ss", "Sessions live in Redis; Memcached is kept warm as a fallback", ["redis"], ["memcached"], []),
    ("agentcore", "demoted", "ho", "The user said the api runs on Kubernetes, with ECS kept as a cold standby.", ["kubernetes"], ["ecs"], []),
    ("mem0", "demoted", "ci", "Monorepo builds on GitHub Actions; Jenkins only runs the nightly archive job", ["github actions"], ["jenkins"], []),
    ("notes", "demoted", "co", "checkout: Lee is the owner now, Kim stays on as reviewer", ["@lee"], ["@kim"], []),
    ("mem0", "demoted", "so", "Tom owns search; Maria is kept as a backup reviewer", ["@tom"], ["@maria"], []),
    ("graphiti", "demoted", "gw", "gateway is written in Go; the Node version is kept as a read-only reference", ["go"], ["node"], []),
    ("notes", "demoted", "nl", "notifications: Go service is live, the Python one is kept for replays only", ["go"], ["python"], []),
]

# --- "wants X but still runs Y": Y asserted, X neither -------------------------------------
STILL: list[Item] = [
    ("mem0", "still", "gw", "Wants to move the gateway to Go but it still runs on Node", ["node"], [], []),
    ("mem0", "still", "ho", "Wants Kubernetes for the api but it still runs on ECS", ["ecs"], [], []),
    ("agentcore", "still", "ob", "The user would like orders on Kafka, but orders still publishes to RabbitMQ.", ["rabbitmq"], [], []),
    ("notes", "still", "ss", "we want Redis for sessions, but we're still on Memcached", ["memcached"], [], []),
    ("mem0", "still", "ci", "Prefers GitHub Actions but the monorepo still builds on Jenkins", ["jenkins"], [], []),
    ("mem0", "still", "nl", "Would rather write notifications in Go; it is still Python today", ["python"], [], []),
    ("agentcore", "still", "pg", "The user hopes to upgrade orders to Postgres 16, but it is still on 14.", ["14"], [], []),
    ("notes", "still", "dj", "reports should go to Django 5.0 at some point, still 4.2 for now", ["4.2"], [], []),
    ("mem0", "still", "ps", "Wants payments-v2 to become the source of truth, but payments-v1 still is", ["payments-v1"], [], []),
    ("graphiti", "still", "bs", "billing-v2 remains the system of record although billing-v3 is planned to replace it", ["billing-v2"], [], []),
    ("mem0", "still", "co", "Lee wants to hand checkout over but still owns it", ["@lee"], [], []),
    ("mem0", "still", "tf", "Wants to bump testify to v1.9.0 in api but is still on v1.8.4", ["v1.8.4"], [], []),
    ("notes", "still", "cb", "cli: cobra 1.8.0 upgrade blocked, still on 1.7.0", ["v1.7.0"], [], []),
    ("agentcore", "still", "so", "The user asked Tom to take search, but Maria still owns it.", ["@maria"], [], []),
    ("mem0", "still", "gw", "Despite the Go proposal, the gateway is still in Node", ["node"], [], []),
    ("notes", "still", "lb", "checkout: target p99 < 250 ms eventually, still p99 < 300 ms in the SLO doc", ["p99 < 300 ms"], [], []),
]

# --- "was A, now B" in every order and register: B asserted, A negated ---------------------
WAS_NOW: list[Item] = [
    ("notes", "was-now", "lb", "checkout budget: was p99 < 300 ms, now p99 < 250 ms", ["p99 < 250 ms"], ["p99 < 300 ms"], []),
    ("mem0", "was-now", "lb", "Checkout p99 budget tightened to 250ms (was 300ms)", ["p99 < 250 ms"], ["p99 < 300 ms"], []),
    ("agentcore", "was-now", "lb", "The user said the checkout latency budget is now p99 < 250 ms instead of p99 < 300 ms.", ["p99 < 250 ms"], ["p99 < 300 ms"], []),
    ("notes", "was-now", "gw", "gateway language: was Node, now Go", ["go"], ["node"], []),
    ("notes", "was-now", "gw", "gateway: node -> go", ["go"], ["node"], []),
    ("mem0", "was-now", "gw", "Gateway has been Go since the move off Node", ["go"], ["node"], []),
    ("graphiti", "was-now", "gw", "gateway is written in Go (previously Node)", ["go"], ["node"], []),
    ("notes", "was-now", "ob", "orders broker — before: RabbitMQ; after: Kafka", ["kafka"], ["rabbitmq"], []),
    ("mem0", "was-now", "ob", "Orders is on Kafka since the migration away from RabbitMQ", ["kafka"], ["rabbitmq"], []),
    ("agentcore", "was-now", "ss", "<topic name=\"Sessions\">Session storage was Memcached; it is Redis now.</topic>", ["redis"], ["memcached"], []),
    ("notes", "was-now", "co", "checkout owner: was @kim, now @lee", ["@lee"], ["@kim"], []),
    ("mem0", "was-now", "so", "Search used to be Maria's; Tom owns it now", ["@tom"], ["@maria"], []),
    ("notes", "was-now", "oc", "payments on-call: Ana → Ben", ["@ben"], ["@ana"], []),
    ("mem0", "was-now", "ci", "Monorepo CI is GitHub Actions now, it was Jenkins before", ["github actions"], ["jenkins"], []),
    ("graphiti", "was-now", "nl", "notifications was rewritten in Go; it was Python until 2024", ["go"], ["python"], []),
    ("notes", "was-now", "ho", "api hosting ECS ⇒ Kubernetes (done)", ["kubernetes"], ["ecs"], []),
    ("mem0", "was-now", "bs", "billing's system of record: billing-v3 now, billing-v2 before", ["billing-v3"], ["billing-v2"], []),
    ("agentcore", "was-now", "pg", "The orders database went from PostgreSQL 14 to 16 last month.", ["16"], ["14"], []),
]

# --- hedges and questions: neither ----------------------------------------------------------
HEDGE: list[Item] = [
    ("notes", "hedge", "co", "unclear whether Kim or Lee owns checkout", [], [], []),
    ("mem0", "hedge", "co", "Not sure if Lee still owns checkout", [], [], []),
    ("agentcore", "hedge", "co", "The user asked who owns checkout now, Kim or Lee?", [], [], []),
    ("notes", "hedge", "gw", "Is the gateway Go or Node these days?", [], [], []),
    ("mem0", "hedge", "gw", "Thinks the gateway might be written in Go", [], [], []),
    ("graphiti", "hedge", "ob", "orders possibly publishes to Kafka", [], [], []),
    ("notes", "hedge", "ob", "orders: Kafka? RabbitMQ? need to check", [], [], []),
    ("agentcore", "hedge", "ps", "The user was unsure whether payments-v2 is already the source of truth.", [], [], []),
    ("mem0", "hedge", "ss", "Doesn't remember if sessions use Redis or Memcached", [], [], []),
    ("notes", "hedge", "pg", "orders DB is 14 or 16, I forget which", [], [], []),
    ("mem0", "hedge", "so", "Maybe Tom owns search", [], [], []),
    ("notes", "hedge", "ho", "api might be on Kubernetes already, not confirmed", [], [], []),
    ("mem0", "hedge", "tf", "Unsure whether api is on testify v1.9.0 yet", [], [], []),
    ("agentcore", "hedge", "ci", "The user wondered whether the monorepo still uses Jenkins.", [], [], []),
    ("mem0", "hedge", "nl", "Believes notifications could be Python, needs confirmation", [], [], []),
    ("notes", "hedge", "oc", "who is payments on-call, Ana or Ben? ask in #payments", [], [], []),
]

# --- plans and proposals: neither -----------------------------------------------------------
PLAN: list[Item] = [
    ("notes", "plan", "gw", "the move of the gateway to Go is scheduled for spring", [], [], []),
    ("mem0", "plan", "gw", "Plans to rewrite the gateway in Go next quarter", [], [], []),
    ("agentcore", "plan", "ob", "The user intends to migrate orders to Kafka.", [], [], []),
    ("graphiti", "plan", "ob", "orders WILL_MIGRATE_TO Kafka", [], [], []),
    ("mem0", "plan", "ps", "Proposed making payments-v2 the source of truth", [], [], []),
    ("notes", "plan", "ps", "RFC: cut payments source of truth over to payments-v2 in May", [], [], []),
    ("mem0", "plan", "ss", "Going to try Redis for sessions", [], [], []),
    ("agentcore", "plan", "pg", "The user plans to upgrade the orders database to PostgreSQL 16.", [], [], []),
    ("notes", "plan", "co", "Lee may take over checkout after the reorg", [], [], []),
    ("mem0", "plan", "so", "Tom is expected to take over search in Q3", [], [], []),
    ("notes", "plan", "ho", "TODO: move api to Kubernetes", [], [], []),
    ("mem0", "plan", "ci", "Wants to migrate the monorepo CI to GitHub Actions", [], [], []),
    ("graphiti", "plan", "tf", "api upgrade to testify v1.9.0 is planned", [], [], []),
    ("agentcore", "plan", "dj", "The user is considering an upgrade of reports to Django 5.0.", [], [], []),
    ("notes", "plan", "lb", "proposal: tighten checkout to p99 < 250 ms next half", [], [], []),
    ("mem0", "plan", "nl", "Next step: port notifications to Go", [], [], []),
]

# --- date-scoped past: past, not current ----------------------------------------------------
PAST: list[Item] = [
    ("notes", "past", "gw", "between 2021 and 2023 the gateway used Node", [], ["node"], []),
    ("mem0", "past", "gw", "Back in 2020 the gateway ran on Node", [], ["node"], []),
    ("graphiti", "past", "gw", "- gateway is written in Node (valid from 2019-02-01) (invalid since 2023-06-30)", [], ["node"], []),
    ("agentcore", "past", "ob", "The user recalled that in 2022 orders published to RabbitMQ.", [], ["rabbitmq"], []),
    ("notes", "past", "ob", "orders ran on RabbitMQ from 2018 to 2023", [], ["rabbitmq"], []),
    ("graphiti", "past", "co", "Kim owned checkout from 2021-01 to 2024-03", [], ["@kim"], []),
    ("mem0", "past", "co", "Kim owned checkout until last spring", [], ["@kim"], []),
    ("graphiti", "past", "ps", "- payments-v1 IS_SOURCE_OF_TRUTH_FOR payments (valid from 2019-01-01) (invalid since 2025-02-01)", [], ["payments-v1"], []),
    ("notes", "past", "ps", "in 2023 payments-v1 was still the system of record", [], ["payments-v1"], []),
    ("mem0", "past", "ss", "Sessions were kept in Memcached during 2022", [], ["memcached"], []),
    ("agentcore", "past", "pg", "The user said the orders database was on Postgres 14 in 2023.", [], ["14"], []),
    ("notes", "past", "so", "Maria owned search 2020–2022", [], ["@maria"], []),
    ("mem0", "past", "ci", "Until 2024 the monorepo built on Jenkins", [], ["jenkins"], []),
    ("graphiti", "past", "ho", "api ran on ECS between 2019 and 2022", [], ["ecs"], []),
    ("notes", "past", "nl", "notifications was Python back then (2021)", [], ["python"], []),
    ("mem0", "past", "oc", "Ana was payments on-call last week", [], ["@ana"], []),
    ("agentcore", "past", "tf", "The user noted api pinned testify v1.8.4 throughout 2023.", [], ["v1.8.4"], []),
]

# --- rollbacks: the first value current again -----------------------------------------------
ROLLBACK: list[Item] = [
    ("notes", "rollback", "ob", "orders switched to Kafka, then reverted to RabbitMQ", ["rabbitmq"], ["kafka"], []),
    ("mem0", "rollback", "ob", "Moved orders to Kafka but rolled back after the outage", [], ["kafka"], []),
    ("agentcore", "rollback", "gw", "The user said the gateway Go rewrite was rolled back; it runs on Node again.", ["node"], ["go"], []),
    ("notes", "rollback", "gw", "gateway: node -> go -> node (go reverted)", ["node"], ["go"], []),
    ("mem0", "rollback", "ss", "Tried Redis for sessions, went back to Memcached", ["memcached"], ["redis"], []),
    ("graphiti", "rollback", "ps", "payments source of truth switched to payments-v2 and then back to payments-v1", ["payments-v1"], ["payments-v2"], []),
    ("notes", "rollback", "pg", "orders: PG 16 upgrade reverted, back on 14", ["14"], ["16"], []),
    ("mem0", "rollback", "tf", "api's testify bump to v1.9.0 was reverted to v1.8.4", ["v1.8.4"], ["v1.9.0"], []),
    ("agentcore", "rollback", "ho", "The user said the api moved to Kubernetes, then back to ECS after cost issues.", ["ecs"], ["kubernetes"], []),
    ("notes", "rollback", "ci", "monorepo CI: GitHub Actions migration undone, Jenkins again", ["jenkins"], ["github actions"], []),
    ("mem0", "rollback", "co", "Checkout went to Lee for a month, then back to Kim", ["@kim"], ["@lee"], []),
    ("notes", "rollback", "dj", "reports: Django 5.0 upgrade rolled back to 4.2", ["4.2"], ["5.0"], []),
    ("mem0", "rollback", "nl", "Notifications Go port reverted; Python is live again", ["python"], ["go"], []),
    ("graphiti", "rollback", "bs", "billing-v3 cutover was reverted; billing-v2 is the system of record again", ["billing-v2"], ["billing-v3"], []),
]

# --- lists and tables of several subjects: each line for its own subject --------------------
LIST: list[Item] = [
    ("summary", "list", "co", "Owners: search - Kim; checkout - Lee; refunds - Ana", ["@lee"], [], []),
    ("summary", "list", "co", "| service | owner |\n|---|---|\n| search | Kim |\n| checkout | Lee |", ["@lee"], [], []),
    ("summary", "list", "co", "- search: @kim\n- refunds: @lee", [], [], []),
    ("summary", "list", "so", "Owners: search - Kim; checkout - Lee; refunds - Ana", [], [], ["Kim"]),
    ("summary", "list", "ro", "Owners: search - Kim; checkout - Lee; refunds - Ana", ["@ana"], [], []),
    ("summary", "list", "ro", "Ana owns refunds; Ben owns checkout", ["@ana"], [], []),
    ("summary", "list", "gw", "Languages: gateway Go, exporter Node, billing-worker Python", ["go"], [], []),
    ("summary", "list", "gw", "| service | language |\n| exporter | Go |\n| admin | Node |", [], [], []),
    ("summary", "list", "gw", "- exporter: Go\n- gateway: Node\n- scheduler: Go", ["node"], [], []),
    ("summary", "list", "nl", "- exporter: Go\n- notifications: Python\n- scheduler: Go", ["python"], [], []),
    ("summary", "list", "ob", "Brokers: orders → Kafka, notifications → RabbitMQ", ["kafka"], [], []),
    ("summary", "list", "ob", "inventory uses RabbitMQ, shipping uses Kafka, orders uses SQS", [], [], ["SQS"]),
    ("agentcore", "list", "ob", "<topic name=\"Messaging\">Inventory consumes from Kafka. Orders publishes to RabbitMQ.</topic>", ["rabbitmq"], [], []),
    ("summary", "list", "pg", "Databases: orders Postgres 16, analytics Postgres 14", ["16"], [], []),
    ("summary", "list", "pg", "| db | version |\n| inventory | 16 |\n| orders | 14 |", ["14"], [], []),
    ("summary", "list", "tf", "api: testify v1.9.0; worker: testify v1.8.4", ["v1.9.0"], [], []),
    ("summary", "list", "tf", "worker: testify v1.9.0, scheduler: testify v1.8.4", [], [], []),
    ("summary", "list", "ss", "Stores: sessions in Redis, rate limits in Memcached", ["redis"], [], []),
    ("summary", "list", "ho", "Hosting: api on ECS, docs on Kubernetes", ["ecs"], [], []),
    ("summary", "list", "oc", "On call this week: search - Ana, payments - Ben", ["@ben"], [], []),
    ("summary", "list", "ps", "Sources of truth: refunds → refunds-v2, payments → payments-v1", ["payments-v1"], [], []),
    ("summary", "list", "ci", "CI: website on GitHub Actions, monorepo on Jenkins", ["jenkins"], [], []),
    ("summary", "list", "dj", "Django versions: reports 4.2, admin-portal 5.0", ["4.2"], [], []),
    ("summary", "list", "lb", "Latency budgets: search p99 < 300 ms, checkout p99 < 250 ms", ["p99 < 250 ms"], [], []),
]

# --- plain statements, negations and transitions in third-party registers ------------------
PLAIN: list[Item] = [
    ("mem0", "plain", "co", "Lee owns the checkout service", ["@lee"], [], []),
    ("mem0", "plain", "co", "Is the owner of checkout", [], [], []),
    ("graphiti", "plain", "co", "Kim OWNS checkout", ["@kim"], [], []),
    ("agentcore", "plain", "co", "The user said Lee is responsible for checkout.", ["@lee"], [], []),
    ("graphiti", "negation", "co", "Kim no longer owns checkout", [], ["@kim"], []),
    ("mem0", "transition", "co", "Kim handed checkout over to Lee", ["@lee"], ["@kim"], []),
    ("mem0", "plain", "gw", "The gateway is written in Go", ["go"], [], []),
    ("graphiti", "plain", "gw", "gateway IS_WRITTEN_IN Node.js", ["node"], [], []),
    ("agentcore", "plain", "gw", "The user's gateway service is implemented in Go.", ["go"], [], []),
    ("mem0", "negation", "gw", "Gateway no longer uses Node", [], ["node"], []),
    ("graphiti", "transition", "gw", "gateway was migrated from Node to Go", ["go"], ["node"], []),
    ("mem0", "plain", "ob", "Orders publishes events to Kafka", ["kafka"], [], []),
    ("graphiti", "plain", "ob", "orders PUBLISHES_TO RabbitMQ", ["rabbitmq"], [], []),
    ("agentcore", "negation", "ob", "The user said orders stopped using RabbitMQ.", [], ["rabbitmq"], []),
    ("mem0", "plain", "ps", "payments-v2 is the source of truth for payments", ["payments-v2"], [], []),
    ("graphiti", "transition", "ps", "payments-v2 replaced payments-v1 as the payments system of record", ["payments-v2"], ["payments-v1"], []),
    ("mem0", "plain", "bs", "Billing's source of truth is billing-v3", ["billing-v3"], [], []),
    ("agentcore", "negation", "bs", "The user said billing-v2 is no longer authoritative for billing.", [], ["billing-v2"], []),
    ("mem0", "plain", "so", "Maria owns search", ["@maria"], [], []),
    ("graphiti", "transition", "so", "Tom took over search from Maria", ["@tom"], ["@maria"], []),
    ("mem0", "plain", "ro", "Ben owns refunds", ["@ben"], [], []),
    ("agentcore", "plain", "oc", "The user said Ben is on call for payments this week.", ["@ben"], [], []),
    ("mem0", "plain", "ss", "Sessions are stored in Redis", ["redis"], [], []),
    ("graphiti", "negation", "ss", "sessions no longer use Memcached", [], ["memcached"], []),
    ("mem0", "plain", "ho", "The api is deployed on Kubernetes", ["kubernetes"], [], []),
    ("mem0", "plain", "ci", "Monorepo CI runs on GitHub Actions", ["github actions"], [], []),
    ("mem0", "plain", "nl", "Notifications is written in Python", ["python"], [], []),
    ("graphiti", "transition", "nl", "notifications was ported from Python to Go", ["go"], ["python"], []),
    ("mem0", "plain", "lb", "Checkout latency budget is p99 < 250 ms", ["p99 < 250 ms"], [], []),
    ("agentcore", "plain", "pg", "The user is running PostgreSQL 16 for the orders database.", ["16"], [], []),
    ("mem0", "plain", "dj", "Reports is on Django 5.0", ["5.0"], [], []),
    ("mem0", "plain", "cb", "cli uses cobra v1.8.0", ["v1.8.0"], [], []),
    ("agentcore", "plain", "px", "The user said the ledger uses pgx v5.6.0.", ["v5.6.0"], [], []),
    ("agentcore", "plain", "s3", "The user's uploader depends on @aws-sdk/client-s3 3.600.0.", ["3.600.0"], [], []),
]

# --- more of the same kinds, written after the first 289 and before any reader change -------
MORE: list[Item] = [
    ("mem0", "subject", "ps", "User's team made ledger-v2 the source of truth", [], [], []),
    ("notes", "subject", "co", "@kim is reviewing the search ranking PR", [], [], []),
    ("graphiti", "subject", "so", "Maria WORKS_AT Acme", [], [], []),
    ("agentcore", "subject", "ss", "The user said the cache layer for the catalog uses Memcached.", [], [], []),
    ("mem0", "subject", "ho", "The batch jobs run on ECS Fargate", [], [], []),
    ("notes", "subject", "px", "reporting service bumped pgx to v5.6.0", [], [], []),
    ("mem0", "invented", "nl", "Notifications is written in C#", [], [], ["C#"]),
    ("graphiti", "invented", "ro", "Refunds IS_OWNED_BY Platform Team", [], [], ["Platform Team"]),
    ("agentcore", "invented", "ps", "The user said payments data is authoritative in the payments-core database.", [], [], ["the payments-core database"]),
    ("notes", "invented", "ss", "sessions -> Valkey", [], [], ["Valkey"]),
    ("mem0", "invented", "dj", "Reports runs Django 4.1", [], [], ["4.1"]),
    ("mem0", "module", "cb", "The cli's command framework is spf13/cobra, v1.8", ["v1.8.0"], [], []),
    ("notes", "module", "tf", "api: `go get github.com/stretchr/testify@v1.9.0` done", ["v1.9.0"], [], []),
    ("agentcore", "module", "s3", "The user upgraded the uploader's S3 client from 3.400.0 to 3.600.0.", ["3.600.0"], ["3.400.0"], []),
    ("mem0", "past", "ro", "Ben owned refunds in 2022", [], ["@ben"], []),
    ("notes", "past", "bs", "billing-v2 was the system of record through 2024", [], ["billing-v2"], []),
    ("mem0", "hedge", "bs", "Is billing-v3 the source of truth yet?", [], [], []),
    ("mem0", "plan", "oc", "Ben will be on call for payments next week", [], [], []),
    ("notes", "still", "oc", "Ben was supposed to take payments on-call but Ana still has it", ["@ana"], [], []),
    ("summary", "list", "so", "| area | owner |\n| search | Tom |\n| analytics | Maria |", ["@tom"], [], []),
    ("summary", "list", "bs", "Systems of record: billing → billing-v3; invoices → invoices-v1", ["billing-v3"], [], []),
    ("notes", "was-now", "dj", "reports: Django 4.2 → 5.0, shipped Tuesday", ["5.0"], ["4.2"], []),
    ("mem0", "rollback", "so", "Search moved to Tom briefly, then back to Maria", ["@maria"], ["@tom"], []),
    ("agentcore", "demoted", "dj", "The user said reports runs Django 5.0; the 4.2 branch is kept only for hotfixes.", ["5.0"], ["4.2"], []),
]

ITEMS: list[Item] = (
    SUBJECT + INVENTED + MODULE + DEMOTED + STILL + WAS_NOW + HEDGE + PLAN + PAST + ROLLBACK + LIST
    + PLAIN + MORE
)
# fmt: on


def main(out: str) -> int:
    lines = []
    counters: dict[str, int] = {}
    for source, kind, key, text, asserts, negates, other in ITEMS:
        subject, predicate, values = KEYS[key]
        counters[source] = counters.get(source, 0) + 1
        lines.append(
            json.dumps(
                {
                    "id": f"others-{source}-{counters[source]:03d}",
                    "source": source,
                    "style": STYLES[source],
                    "kind": kind,
                    "subject": subject,
                    "predicate": predicate,
                    "values": values,
                    "text": text,
                    "asserts": asserts,
                    "negates": negates,
                    "other": other,
                },
                ensure_ascii=False,
            )
        )
    Path(out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} items -> {out}")
    return 0


if __name__ == "__main__":
    default = "healthd/data/reader_labelled_others.jsonl"
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else default))
