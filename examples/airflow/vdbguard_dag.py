"""Airflow DAG: a daily vdbguard scan that fails its task on high-severity findings.

Copy into your DAGs folder. vdbguard runs in its own virtual environment on the worker (its torch and
spaCy pins stay out of Airflow's), so the task is a shell command:

    <venv>/bin/vdbguard scan --config <job file>

The scan's exit code is the task's result: 0 clean, 1 a finding at least as severe as the job's
``fail_on`` (``"high"`` in examples/vdbguard.toml; the task fails), 2 a configuration or connection error.

Set up once (Admin -> Variables / Connections, or the CLI):

    airflow variables set vdbguard_bin /opt/vdbguard/.venv/bin/vdbguard
    airflow variables set vdbguard_config /opt/airflow/vdbguard/vdbguard.toml
    airflow variables set vdbguard_cache_dir /opt/airflow/vdbguard/cache
    airflow connections add qdrant_prod --conn-type generic --conn-host qdrant.internal --conn-password '<api key>'

The job file names the key's environment variable (``[stores.credentials] api_key = "QDRANT_API_KEY"``);
the task sets that variable from the connection's password, which Airflow masks in task logs.
Works with Airflow 2.4+ and 3.
"""

from __future__ import annotations

from datetime import datetime, timedelta

try:  # Airflow 3
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.operators.bash import BashOperator

# Jinja, rendered by Airflow when the task runs (never at DAG parse time, so no variable is read while
# the scheduler parses this file).
VDBGUARD = "{{ var.value.get('vdbguard_bin', '/opt/vdbguard/.venv/bin/vdbguard') }}"
CONFIG = "{{ var.value.get('vdbguard_config', '/opt/airflow/vdbguard/vdbguard.toml') }}"
SCAN_COMMAND = f"{VDBGUARD} scan --config {CONFIG}"

# Environment variable named in the job file -> where its value comes from (Airflow connection fields).
CREDENTIALS = {
    "QDRANT_API_KEY": "{{ conn.qdrant_prod.password }}",
}

with DAG(
    dag_id="vdbguard_scan",
    description="Scan the vector stores for privacy leaks (vdbguard)",
    schedule="@daily",
    start_date=datetime(2025, 1, 1),
    catchup=False,  # one scan of the store as it is now, not one per missed day
    max_active_runs=1,  # never two scans on one state file
    dagrun_timeout=timedelta(hours=6),
    tags=["privacy", "vdbguard"],
    default_args={
        # No retries: exit 1 means findings, which a retry finds again. (A retry would be cheap: with
        # job.state set, records already scanned are carried over, not attacked again.)
        "retries": 0,
        "execution_timeout": timedelta(hours=5),
    },
) as dag:
    BashOperator(
        task_id="scan",
        bash_command=SCAN_COMMAND,  # any non-zero exit fails the task
        env={
            **CREDENTIALS,
            # trained attacks are cached here: minutes of training once, not every day
            "VDBGUARD_CACHE_DIR": "{{ var.value.get('vdbguard_cache_dir', '/opt/airflow/vdbguard/cache') }}",
        },
        append_env=True,  # keep the worker's PATH, HOME, ... beside the variables above
    )
