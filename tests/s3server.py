"""A real S3-compatible server for the object storage tests: moto's (`python -m
moto.server`, from PyPI) as its own process on 127.0.0.1 and a free port, ended by pid.

With `auth=True` it checks signatures as S3 does: the first INITIAL_NO_AUTH_ACTION_COUNT
requests (made here) create an IAM user with full access and its key; after that, only
requests signed with that key are served, and any other key is refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import boto3
import httpx
from harness import free_port

REGION = "us-east-1"


class S3Server:
    def __init__(self, auth: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {"PATH": "/usr/bin:/bin", "MOTO_ALLOW_NONEXISTENT_REGION": "1"}
        if auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/moto-api/", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise AssertionError("the moto S3 server never answered") from None
                time.sleep(0.05)
        self.key_id, self.secret = "testing", "testing"
        if auth:
            iam = self.client("iam")
            iam.create_user(UserName="cogserve")
            key = iam.create_access_key(UserName="cogserve")["AccessKey"]
            iam.put_user_policy(UserName="cogserve", PolicyName="all", PolicyDocument=json.dumps(
                {"Version": "2012-10-17",
                 "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
            self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]

    def client(self, service: str = "s3", key_id: str | None = None,
               secret: str | None = None):
        return boto3.client(service, endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id=key_id or getattr(self, "key_id", "testing"),
                            aws_secret_access_key=secret or getattr(self, "secret", "testing"))

    def env(self, **extra: str) -> dict[str, str]:
        """What a cogserve server needs to reach this store, as AWS's tools read it."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": self.key_id,
                "AWS_SECRET_ACCESS_KEY": self.secret, "AWS_REGION": REGION, **extra}

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)
