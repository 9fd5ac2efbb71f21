"""The deployment check's create-bucket one-shot (MinIO's `mc mb` + lifecycle rule, with boto3)."""

import json
import os

import boto3

s3 = boto3.client(
    "s3",
    endpoint_url=os.environ.get("S3_ENDPOINT_URL", "http://minio:9000"),
    aws_access_key_id=os.environ["MINIO_ROOT_USER"],
    aws_secret_access_key=os.environ["MINIO_ROOT_PASSWORD"],
    region_name="us-east-1",
)
bucket = os.environ.get("S3_BUCKET", "unmask")
if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
    s3.create_bucket(Bucket=bucket)
rules = json.loads(os.environ["BUCKET_LIFECYCLE_JSON"])
s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration=rules)
print(f"bucket {bucket} ready")
